# claude-print.sh: Claude Code in print mode (docs/harness.md "Claude Code,
# print mode"): per delivery one
#   CMD -p --output-format json --permission-mode MODE [--resume ID]
# with the delivery's text on stdin. It prints one JSON object: `result`
# (the final text), `session_id` (resumed on the next turn), `is_error`.
# The role sets the permission mode: read-only is plan, else
# bypassPermissions.
ADAPTER=claude-print
INSTALL='npm install -g @anthropic-ai/claude-code'
PMODE=bypassPermissions
[ "$ROLE" = read-only ] && PMODE=plan
cli_turn() {
	in=$1 reply=$2 events=$3
	set -- -p --output-format json --permission-mode "$PMODE"
	sid=$(cat "$H/session" 2>/dev/null)
	[ -n "$sid" ] && set -- "$@" --resume "$sid"
	run_bg "$in" "$events" "$@"
	rc=$?
	jget result "$events" >"$reply"
	s=$(jget session_id "$events") && printf '%s\n' "$s" >"$H/session"
	if [ "$rc" -ne 0 ] || grep -q '"is_error":true' "$events"; then
		m=$(jget subtype "$events")
		[ "$rc" -eq 127 ] && m=$(notfound)
		err=$(printf 'claude exited %s%s' "$rc" "${m:+: $m}" | oneline)
	fi
}
