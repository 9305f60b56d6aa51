# bash completion for ldsearch (ldshim)
_ldsearch() {
    local cur prev words cword
    _init_completion || return
    local opts="--dlopen --dlopen-noload --dlmopen --from --keep-going --secure --no-secure --library-path
        --inhibit-rpath --inhibit-cache --cache --root --ld-so --platform --hwcaps --lib --env --all-lines
        --no-config-cache --json --color --help --version"
    case $prev in
        --cache|--ld-so) _filedir; return ;;
        --root|--library-path) _filedir -d; return ;;
        --color) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
        --env) COMPREPLY=($(compgen -W "LD_LIBRARY_PATH= LD_PRELOAD= LD_ORIGIN_PATH=" -- "$cur")); compopt -o nospace; return ;;
        --hwcaps) COMPREPLY=($(compgen -W "x86-64-v4,x86-64-v3,x86-64-v2 x86-64-v3,x86-64-v2 x86-64-v2 none" -- "$cur")); return ;;
        --dlopen|--dlopen-noload|--dlmopen|--from|--inhibit-rpath|--platform|--lib) return ;;
    esac
    # check [--json] [--jobs N] [--no-config-cache] [--root DIR] PATH...
    if [[ $cword -gt 1 && ${words[1]} == check ]]; then
        [[ $prev == --jobs || $prev == -j ]] && return
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--json --jobs --no-config-cache --root --help" -- "$cur"))
        else
            _filedir
        fi
        return
    fi
    # After "--diff --", complete the command.
    local i
    for ((i = 1; i < cword; i++)); do
        if [[ ${words[1]} == --diff && ${words[i]} == -- ]]; then
            _command_offset $((i + 1))
            return
        fi
    done
    if [[ $cword -eq 1 && $cur != -* ]]; then
        COMPREPLY=($(compgen -W "tree why check" -- "$cur") $(compgen -c -- "$cur"))
        return
    fi
    if [[ $cword -eq 1 && $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts --diff --replay" -- "$cur"))
        return
    fi
    if [[ ${words[1]} == --replay ]]; then
        _filedir
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        [[ ${words[1]} == --diff ]] && COMPREPLY=($(compgen -W "--keep --" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -c -- "$cur"))
    _filedir
}
complete -F _ldsearch ldsearch
