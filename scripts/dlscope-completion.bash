# bash completion for dlscope. The options come from 'dlscope CMD --help' itself, the one
# source the man page's OPTIONS are checked against: nothing here to keep in step.
_dlscope_options()
{
	"$1" "$2" --help 2>/dev/null |
		sed -n 's/^  \(-[[:alnum:]], \)\{0,1\} *\(--[[:alnum:]-]*\).*/\2/p'
}

# The options of CMD that take a value (an upper-case word after them in its --help).
_dlscope_valued()
{
	"$1" "$2" --help 2>/dev/null |
		sed -n 's/^  \(-[[:alnum:]], \)\{0,1\} *\(--[[:alnum:]-]*\) [A-Z].*/\2/p'
}

_dlscope()
{
	local cur prev cmd i
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	cmd=
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--) # a command of its own: complete it as bash would
			COMPREPLY=($(compgen -c -- "$cur"))
			return ;;
		--no-cache) ;;
		-*) ;;
		*) [[ -z $cmd ]] && cmd=${COMP_WORDS[i]} ;;
		esac
	done
	if [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W "libs check lint stacks watch record agent ui report export merge capture
			help --help --version --no-cache" -- "$cur"))
		return
	fi
	case $prev in
	-p | --pid | --job)
		COMPREPLY=($(compgen -W "$(ps -e -o pid= 2>/dev/null)" -- "$cur"))
		return ;;
	-o | --output | --replay | --core | --exe | --json)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--textfile-dir | --reports-dir)
		COMPREPLY=($(compgen -d -- "$cur"))
		return ;;
	--fail-on)
		COMPREPLY=($(compgen -W "info warning error" -- "$cur"))
		return ;;
	--only)
		COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" check --list 2>/dev/null |
			sed 's/ .*//')" -- "$cur"))
		return ;;
	esac
	# Any other option's value (a number, a name, a match): no file or PID is it.
	if [[ $prev == -* ]] &&
		_dlscope_valued "${COMP_WORDS[0]}" "$cmd" | grep -qxF -- "$prev"; then
		COMPREPLY=()
		return
	fi
	if [[ $cmd == help ]]; then
		COMPREPLY=($(compgen -W "libs check lint stacks watch record agent ui report export merge capture" \
			-- "$cur"))
	elif [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_dlscope_options "${COMP_WORDS[0]}" "$cmd")" -- "$cur"))
	else
		case $cmd in
		lint | export | merge | report | check | stacks) COMPREPLY=($(compgen -f -- "$cur")) ;;
		esac
		case $cmd in
		libs | check | stacks | watch | record | ui | report | capture)
			COMPREPLY+=($(compgen -W "$(ps -e -o pid= 2>/dev/null)" -- "$cur")) ;;
		esac
	fi
}
complete -F _dlscope dlscope
