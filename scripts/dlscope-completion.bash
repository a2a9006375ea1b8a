# bash completion for dlscope. What each command's options and operands are comes from
# 'dlscope help --complete CMD', printed from the command's option table, the one source of its
# --help and of the man page's OPTIONS: nothing here to keep in step. Its lines:
#   operands [pid] [file] [command]
#   --NAME -L|- none|required|optional none|pid|file|dir|words [WORD...]

_dlscope_pids()
{
	compgen -W "$(ps -e -o pid= 2>/dev/null)" -- "$1"
}

_dlscope()
{
	local dls=${COMP_WORDS[0]} cur prev cmd dd i spec ops
	local name letter arg kind words
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	# "--opt=<TAB>": bash made "=" a word of its own.
	if [[ $prev == = && $COMP_CWORD -ge 2 ]]; then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	elif [[ $cur == --*=* ]]; then
		prev=${cur%%=*} cur=${cur#*=}
	fi
	cmd='' dd=''
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--) dd=$i; break ;;
		-*) ;;
		*) [[ -z $cmd ]] && cmd=${COMP_WORDS[i]} ;;
		esac
	done
	COMPREPLY=()
	if [[ -z $cmd ]]; then
		[[ -n $dd ]] && return
		COMPREPLY=($(compgen -W "$("$dls" help --complete 2>/dev/null)
			help --help --version --no-cache" -- "$cur"))
		return
	fi
	if [[ $cmd == help ]]; then
		COMPREPLY=($(compgen -W "$("$dls" help --complete 2>/dev/null)" -- "$cur"))
		return
	fi
	spec=$("$dls" help --complete "$cmd" 2>/dev/null) || return
	ops=$(sed -n 's/^operands//p' <<<"$spec")
	if [[ -n $dd ]]; then
		# After "--": a command and its own arguments, or more operands.
		if [[ $ops == *command* ]]; then
			if ((COMP_CWORD == dd + 1)); then
				COMPREPLY=($(compgen -c -- "$cur"))
			else
				COMPREPLY=($(compgen -f -- "$cur"))
			fi
			return
		fi
	elif [[ $prev == -* ]]; then
		# The value of the option before: what its table says it is.
		while read -r name letter arg kind words; do
			[[ $prev == "$name" || $prev == "$letter" ]] || continue
			case $arg in
			required) ;;
			optional) # --roles [KINDS]: the words, or what would come without them
				[[ $kind == words ]] && COMPREPLY=($(compgen -W "$words" -- "$cur"))
				break ;;
			*) break ;;
			esac
			case $kind in
			pid) COMPREPLY=($(_dlscope_pids "$cur")) ;;
			file) COMPREPLY=($(compgen -f -- "$cur")) ;;
			dir) COMPREPLY=($(compgen -d -- "$cur")) ;;
			words) COMPREPLY=($(compgen -W "$words" -- "$cur")) ;;
			esac
			# A number, a name, a match: no file or PID is it.
			return
		done < <(grep '^--' <<<"$spec")
	fi
	if [[ -z $dd && $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(sed -n 's/^\(--[^ ]*\) .*/\1/p' <<<"$spec")" -- "$cur"))
		return
	fi
	[[ $ops == *file* ]] && COMPREPLY+=($(compgen -f -- "$cur"))
	[[ $ops == *pid* ]] && COMPREPLY+=($(_dlscope_pids "$cur"))
}
complete -F _dlscope dlscope
