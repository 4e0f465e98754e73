#compdef kquotactl

_kquotactl_completion() {
    local -a completions
    local -a completions_nospace
    local -a completions_with_descriptions
    local -a response
    (( ! $+commands[kquotactl] )) && return 1

    response=("${(@f)$(env KQUOTACTL_COMP_WORDS="${(pj:\n:)words[1,CURRENT]}" _KQUOTACTL_COMPLETE=zsh_complete kquotactl)}")

    for type key descr in "${response[@]}"; do
        if [[ "$type" == "plain" ]]; then
            if [[ "$descr" == "_" ]]; then
                completions+=("$key")
            else
                completions_with_descriptions+=("$key":"$descr")
            fi
        elif [[ "$type" == "nospace" ]]; then
            completions_nospace+=("$key")
        elif [[ "$type" == "dir" ]]; then
            _path_files -/
        elif [[ "$type" == "file" ]]; then
            _path_files -f
        fi
    done

    if [ -n "$completions_with_descriptions" ]; then
        _describe -V unsorted completions_with_descriptions -U
    fi

    if [ -n "$completions_nospace" ]; then
        compadd -U -S '' -V unsorted -a completions_nospace
    fi

    if [ -n "$completions" ]; then
        compadd -U -V unsorted -a completions
    fi
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    # autoload from fpath, call function directly
    _kquotactl_completion "$@"
else
    # eval/source/. command, register function for later
    compdef _kquotactl_completion kquotactl
fi
