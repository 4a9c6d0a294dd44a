# bash completion for gpuclusterctl                         -*- shell-script -*-
#
# Installed as share/bash-completion/completions/gpuclusterctl, which
# bash-completion loads the first time gpuclusterctl<TAB> is pressed; without
# bash-completion, `source` this file from ~/.bashrc.  It needs nothing from
# bash-completion.
#
# What it completes comes from the binary being completed (`gpuclusterctl
# __complete`, src/cli/cmd_complete.c), so it always matches that build:
# commands; each command's options as its --help lists them; an option's
# argument by the name --help gives it (FILE, DIR, KINDS, GROUPS, NAME|GLOB:
# the hosts, switches, vCenter and VMs of the spec on the line); SPEC as
# *.yaml/*.yml files (apply: also saved *.json plans).

# Complete a comma list: the words after the last comma of $cur.
_gpuclusterctl_list()
{
	local pre=${cur%"${cur##*,}"}
	COMPREPLY=($(compgen -P "$pre" -W "$1" -- "${cur##*,}"))
	compopt -o nospace 2>/dev/null
}

# Files (and directories) whose name matches the extended pattern $1.
_gpuclusterctl_files()
{
	local f
	COMPREPLY=()
	while IFS= read -r f; do
		if [[ -d $f ]]; then
			COMPREPLY+=("$f/")
		elif [[ $f == $1 ]]; then
			COMPREPLY+=("$f")
		fi
	done < <(compgen -f -- "$cur")
	compopt -o filenames -o nospace 2>/dev/null
}

_gpuclusterctl()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev= bin=${COMP_WORDS[0]}
	local cmd= spec= arg= line i
	local -a flags

	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	# --opt=value: bash splits at '=' (COMP_WORDBREAKS)
	if [[ $cur == = ]]; then
		cur=
	elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	fi
	type -P "$bin" >/dev/null 2>&1 || bin=gpuclusterctl
	COMPREPLY=()

	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "$("$bin" __complete flags 2>/dev/null)" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$("$bin" __complete commands 2>/dev/null)" -- "$cur"))
		fi
		return 0
	fi

	while IFS=' ' read -r line i; do
		flags+=("$line")
		[[ $line == "$prev" ]] && arg=$i
	done < <("$bin" __complete flags "$cmd" 2>/dev/null)
	if [[ -n $arg ]]; then
		case $arg in
		FILE) _gpuclusterctl_files '*' ;;
		DIR)
			COMPREPLY=($(compgen -d -- "$cur"))
			compopt -o filenames 2>/dev/null
			;;
		KINDS) _gpuclusterctl_list "esxi switch vcenter guest kvm libvirt" ;;
		GROUPS) _gpuclusterctl_list "config node pairs cuda" ;;
		'NAME|GLOB')
			for ((i = 1; i < ${#COMP_WORDS[@]}; i++)); do
				case ${COMP_WORDS[i]} in
				*.yaml | *.yml) ((i != COMP_CWORD)) && [[ -f ${COMP_WORDS[i]} ]] &&
					spec=${COMP_WORDS[i]} ;;
				esac
			done
			[[ -n $spec ]] &&
				COMPREPLY=($(compgen -W "$("$bin" __complete targets "$spec" 2>/dev/null)" -- "$cur"))
			;;
		esac
		return 0
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "${flags[*]}" -- "$cur"))
		return 0
	fi
	case $cmd in
	help) COMPREPLY=($(compgen -W "$("$bin" __complete commands 2>/dev/null)" -- "$cur")) ;;
	apply) _gpuclusterctl_files '*.@(yaml|yml|json)' ;;
	plan | validate | unlock | check | graph | discover) _gpuclusterctl_files '*.@(yaml|yml)' ;;
	esac
	return 0
}
complete -F _gpuclusterctl gpuclusterctl
