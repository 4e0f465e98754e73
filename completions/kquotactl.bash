_kquotactl_completion() {
    local line type value
    local -a lines
    COMPREPLY=()
    mapfile -t lines < <(env _KQUOTACTL_COMPLETE=bash_complete KQUOTACTL_COMP_LINE="${COMP_LINE:0:COMP_POINT}" \
        KQUOTACTL_COMP_WORD="$2" "$1" 2>/dev/null)
    for line in "${lines[@]}"; do
        type=${line%%,*}
        value=${line#*,}
        case $type in
            dir) COMPREPLY=(); compopt -o dirnames; return 0 ;;
            file) COMPREPLY=(); compopt -o default; return 0 ;;
            nospace) COMPREPLY+=("$value"); compopt -o nospace ;;
            plain) COMPREPLY+=("$value") ;;
        esac
    done
    return 0
}

complete -o nosort -F _kquotactl_completion kquotactl
