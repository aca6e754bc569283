# claude: a test double of Claude Code's CLI. Interactive (no -p): see
# claude-tui.sh; --settings FILE (a path) gives its hooks. Print mode (-p/--print):
# the prompt as an argument, else stdin; --output-format text|json;
# -r/--resume SESSION_ID; --session-id UUID; --permission-mode MODE
# (plan: nothing is written); --model, --settings, --allowedTools taken.
# With --output-format json, stdout is one object: type "result", subtype
# "success" (or "error_during_execution"), is_error, duration_ms,
# num_turns, result, session_id, total_cost_usd, usage. Sessions live in
# $CLAUDE_CONFIG_DIR (default ~/.claude)/projects/<cwd, / as ->/<id>.jsonl;
# resuming an unknown one prints "No conversation found with session ID:
# ID" and exits 1. -v/--version prints "VERSION (Claude Code)" (the CLI
# reference); the double's version is $CLAUDE_DOUBLE_VERSION (default
# 2.1.79), and what it does follows that version (claude-tui.sh).
# --add-dir DIR... (the CLI reference: "Add additional working directories
# for Claude to read and edit files... Validates each path exists as a
# directory"; variadic: it takes the arguments up to the next option).
home=${CLAUDE_CONFIG_DIR:-$HOME/.claude}
version=${CLAUDE_DOUBLE_VERSION:-2.1.79}
print=0 fmt=text sid='' newsid='' pmode=default prompt='' settings='' adddirs=''
while [ $# -gt 0 ]; do
	case $1 in
	-v | --version)
		echo "$version (Claude Code)"
		exit 0
		;;
	--add-dir)
		[ $# -ge 2 ] || die 1 "error: option '--add-dir <directories...>' argument missing"
		while [ $# -ge 2 ]; do
			case $2 in -*) break ;; esac
			[ -d "$2" ] || die 1 "Error: Path $2 does not exist or is not a directory."
			adddirs="$adddirs$(cd "$2" && pwd)
"
			shift
		done
		;;
	-p | --print) print=1 ;;
	--output-format) fmt=$2 && shift ;;
	-r | --resume) sid=$2 && shift ;;
	--session-id) newsid=$2 && shift ;;
	--permission-mode) pmode=$2 && shift ;;
	--settings) settings=$2 && shift ;;
	--model | --allowedTools | --allowed-tools | --disallowedTools | --append-system-prompt) shift ;;
	--verbose) ;;
	--dangerously-skip-permissions) pmode=bypassPermissions ;;
	-*) die 1 "error: unknown option '$1'" ;;
	*) prompt=$1 ;;
	esac
	shift
done
case $pmode in default | acceptEdits | plan | bypassPermissions | dontAsk) ;; *) die 1 "error: invalid --permission-mode $pmode" ;; esac
case $fmt in text | json) ;; *) die 1 "claude (test double): --output-format $fmt is not implemented" ;; esac
readonly=0
[ "$pmode" = plan ] && readonly=1
proj=$home/projects/$(pwd | tr '/.' '--')
mkdir -p "$proj" || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"; stty sane 2>/dev/null' EXIT
if [ "$print" = 0 ]; then
	interactive
	exit 0
fi
if [ -n "$sid" ]; then
	[ -f "$proj/$sid.jsonl" ] || die 1 "No conversation found with session ID: $sid"
else
	sid=${newsid:-$(uuid)}
	: >"$proj/$sid.jsonl"
fi
if [ -n "$prompt" ]; then printf '%s' "$prompt" >"$tmp/p"; else cat >"$tmp/p"; fi
t0=$(now_ms)
ok=1
reply claude "$tmp/p" "$proj/$sid.jsonl" "$tmp/r" || ok=0
if [ "$fmt" = text ]; then
	[ "$ok" = 1 ] || die 1 "Error: $fail"
	cat "$tmp/r"
	echo
	exit 0
fi
sub=success iserr=false rc=0
if [ "$ok" = 0 ]; then
	sub=error_during_execution iserr=true rc=1
	printf '%s' "$fail" >"$tmp/r"
fi
printf '{"type":"result","subtype":"%s","is_error":%s,"duration_ms":%s,"duration_api_ms":0,"num_turns":1,"result":%s,"session_id":"%s","total_cost_usd":0,"usage":{"input_tokens":%s,"output_tokens":%s}}\n' \
	"$sub" "$iserr" $(($(now_ms) - t0)) "$(jstr "$tmp/r")" "$sid" "$(wc -c <"$tmp/p")" "$(wc -c <"$tmp/r")"
exit "$rc"
