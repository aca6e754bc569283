# codex: a test double of OpenAI Codex CLI's `codex exec` (non-interactive
# mode): its options --json, -o/--output-last-message, -s/--sandbox,
# --skip-git-repo-check, -m/--model, -c/--config, --ephemeral; `resume
# SESSION_ID|--last`; the prompt as an argument, or `-`/none: stdin. With
# --json, stdout is JSON lines: thread.started {thread_id}, turn.started,
# item.completed {item: {id, type: agent_message, text}}, then
# turn.completed {usage} or turn.failed {error: {message}} (exit 1).
# Without it, stdout is the final message. Sessions live in
# $CODEX_HOME/sessions (default ~/.codex).
home=${CODEX_HOME:-$HOME/.codex}
# --version/-V (the CLI's clap flag): "codex-cli VERSION".
case ${1:-} in --version | -V)
	echo "codex-cli ${CODEX_DOUBLE_VERSION:-0.0.0}"
	exit 0
	;;
esac
json=0 last='' sandbox=read-only skipgit=0 sub='' sid='' uselast=0 prompt=''
[ "${1:-}" = exec ] || die 2 "codex (test double): only \`codex exec\` is implemented"
shift
while [ $# -gt 0 ]; do
	case $1 in
	--json | --experimental-json) json=1 ;;
	-o | --output-last-message) last=$2 && shift ;;
	-s | --sandbox) sandbox=$2 && shift ;;
	-m | --model | -c | --config | -p | --profile | -C | --cd) shift ;;
	--skip-git-repo-check) skipgit=1 ;;
	--ephemeral | --full-auto | --color=* | --dangerously-bypass-approvals-and-sandbox) ;;
	--last) uselast=1 ;;
	resume) sub=resume ;;
	-) prompt=- ;;
	-*) die 2 "codex (test double): unknown option $1" ;;
	*)
		if [ "$sub" = resume ] && [ -z "$sid" ] && [ "$uselast" = 0 ]; then sid=$1; else prompt=$1; fi
		;;
	esac
	shift
done
case $sandbox in read-only | workspace-write | danger-full-access) ;; *) die 2 "codex (test double): invalid --sandbox $sandbox" ;; esac
readonly=0
[ "$sandbox" = read-only ] && readonly=1
if [ "$skipgit" = 0 ] && ! git rev-parse --git-dir >/dev/null 2>&1; then
	die 1 "Not inside a trusted directory and --skip-git-repo-check was not specified."
fi
mkdir -p "$home/sessions" || exit 1
if [ "$sub" = resume ]; then
	# shellcheck disable=SC2012 # the newest session file
	[ "$uselast" = 1 ] && sid=$(ls -t "$home/sessions" | head -n 1 | sed 's/\.jsonl$//')
	if [ -z "$sid" ] || [ ! -f "$home/sessions/$sid.jsonl" ]; then
		die 1 "Error: no rollout found for thread id ${sid:-(--last)}"
	fi
else
	sid=$(uuid)
	: >"$home/sessions/$sid.jsonl"
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
if [ -z "$prompt" ] || [ "$prompt" = - ]; then cat >"$tmp/p"; else printf '%s' "$prompt" >"$tmp/p"; fi
echo "codex (test double) session $sid: working" >&2
emit() { [ "$json" = 1 ] && printf '%s\n' "$1"; }
emit "{\"type\":\"thread.started\",\"thread_id\":\"$sid\"}"
emit '{"type":"turn.started"}'
if ! reply codex "$tmp/p" "$home/sessions/$sid.jsonl" "$tmp/r"; then
	printf '%s' "$fail" >"$tmp/f"
	emit "{\"type\":\"turn.failed\",\"error\":{\"message\":$(jstr "$tmp/f")}}"
	echo "ERROR: $fail" >&2
	exit 1
fi
emit "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_0\",\"type\":\"agent_message\",\"text\":$(jstr "$tmp/r")}}"
emit "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":$(wc -c <"$tmp/p"),\"cached_input_tokens\":0,\"output_tokens\":$(wc -c <"$tmp/r")}}"
[ "$json" = 1 ] || cat "$tmp/r"
[ -n "$last" ] && cat "$tmp/r" >"$last"
exit 0
