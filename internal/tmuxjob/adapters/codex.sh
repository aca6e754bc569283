# codex.sh: OpenAI Codex CLI in its non-interactive mode (docs/harness.md
# "Codex CLI"): per delivery one
#   CMD exec --json -o REPLY --skip-git-repo-check --sandbox MODE -          (the first turn)
#   CMD exec --json -o REPLY --skip-git-repo-check --sandbox MODE resume ID - (every later one)
# with the delivery's text on stdin. The session's id is the thread_id of
# the `thread.started` event; the final text is the --output-last-message
# file. The role sets the sandbox: read-only, else danger-full-access.
ADAPTER=codex
INSTALL='npm install -g @openai/codex'
SANDBOX=danger-full-access
[ "$ROLE" = read-only ] && SANDBOX=read-only
cli_turn() {
	in=$1 reply=$2 events=$3
	set -- --json -o "$reply" --skip-git-repo-check --sandbox "$SANDBOX"
	sid=$(cat "$H/session" 2>/dev/null)
	if [ -n "$sid" ]; then
		set -- "$@" resume "$sid" -
	else
		set -- "$@" -
	fi
	run_bg "$in" "$events" exec "$@"
	rc=$?
	if [ -z "$sid" ]; then
		sid=$(jget thread_id "$events") && printf '%s\n' "$sid" >"$H/session"
	fi
	[ "$rc" -eq 0 ] && return 0
	# A failed turn: turn.failed's error.message (or an error event's).
	m=$(grep -E '"type":"(turn.failed|error)"' "$events" | tail -n 1 | sed -n 's/.*"message":"\([^"]*\)".*/\1/p')
	[ "$rc" -eq 127 ] && m=$(notfound)
	err=$(printf 'codex exited %s%s' "$rc" "${m:+: $m}" | oneline)
}
