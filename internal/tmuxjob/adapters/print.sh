# print.sh: the loop of a print-mode adapter. One CLI process per delivery,
# in order; the session goes on from one turn to the next (its id in
# $H/session). The adapter's part before this one defines
#   cli_turn PROMPT REPLY EVENTS: run the CLI once on the text in PROMPT
#     (its stdin), resuming $H/session when it holds an id; write the final
#     text to REPLY and the session's id to $H/session; set err (one line,
#     empty on success).
# The CLI runs in a process group of its own (run_bg): an interrupt (C-c:
# SIGINT to the terminal's foreground group, the adapter) ends that group
# and settles the turn at once with error=interrupted.
intr=0 tick=0
POLL_S=${MU_ADAPTER_POLL_S:-5}
cpid=''
trap 'intr=1; [ -n "$cpid" ] && kill -TERM -"$cpid" 2>/dev/null' INT
trap 'tick=1' USR1
ticker=
if [ "$POLL_S" -gt 0 ]; then
	me=$$
	(while sleep "$POLL_S"; do kill -USR1 "$me" 2>/dev/null || exit 0; done) &
	ticker=$!
fi
trap '[ -n "$ticker" ] && kill "$ticker" 2>/dev/null' EXIT
stty -echo 2>/dev/null

# run_bg IN OUT ARGS…: spec.cmd with ARGS appended, stdin from IN, stdout
# to OUT, in a session of its own (setsid), waited for; an interrupt, even
# one before it started, ends it.
run_bg() {
	i=$1 o=$2
	shift 2
	setsid /bin/sh -c "$CMD"' "$@"' "$CMD" "$@" <"$i" >"$o" &
	cpid=$!
	[ "$intr" = 1 ] && kill -TERM -"$cpid" 2>/dev/null
	# An interrupt that came while setsid was still starting found no
	# group to end: end it (or the process) again until it is gone.
	while
		wait "$cpid"
		rc=$?
		kill -0 "$cpid" 2>/dev/null
	do
		[ "$intr" = 1 ] && { kill -TERM -"$cpid" 2>/dev/null || kill -TERM "$cpid" 2>/dev/null; }
	done
	cpid=''
	return "$rc"
}

turn() {
	e=$1
	take "$e"
	p=$H/prompt r=$H/reply ev=$H/events
	: >"$r"
	[ "$(cat "$IN/$e/kind")" = fresh ] && rm -f "$H/session" && echo "--- a new session ---"
	prompt_of "$e" "$p"
	printf '> '
	head -c 2000 "$p" | cat -v
	echo
	err=''
	cli_turn "$p" "$r" "$ev"
	if [ "$intr" = 1 ]; then
		err=interrupted
	fi
	cat -v "$r" | head -c 4000
	echo
	settle "$r" "$err"
	echo "[settled turn $runs${err:+ ($err)}]"
}

new_inc
echo "mu adapter ($ADAPTER): ready (incarnation $inc)"
while :; do
	intr=0
	e=$(next_in)
	if [ -n "$e" ]; then
		turn "$e"
		continue
	fi
	a=$(next_ans)
	if [ -n "$a" ]; then
		# No dialog is ever pending in print mode: an answer is taken, ignored.
		acursor=$(seqof "$a")
		write_state
		continue
	fi
	tick=0
	if ! read -r _; then
		[ "$tick" = 1 ] || [ "$intr" = 1 ] || exit 0
	fi
done
