function _kquotactl_completion;
    set -l response (env _KQUOTACTL_COMPLETE=fish_complete KQUOTACTL_COMP_WORDS=(commandline -opc | string collect) KQUOTACTL_COMP_CUR=(commandline -ct | string collect) kquotactl);

    for completion in $response;
        set -l metadata (string split -m1 "," -- $completion);

        if test $metadata[1] = "dir";
            __fish_complete_directories $metadata[2];
        else if test $metadata[1] = "file";
            __fish_complete_path $metadata[2];
        else if test $metadata[1] = "plain";
            printf '%s\n' $metadata[2];
        end;
    end;
end;

complete --no-files --command kquotactl --arguments "(_kquotactl_completion)";
