# print.sh: the loop of a print-mode adapter. One CLI process per delivery,
# in order; the session goes on from one turn to the next (its id in
# $H/session). The adapter's part before this one defines
#   cli_turn PROMPT REPLY EVENTS: run the CLI once on the text in PROMPT
#     (its stdin), resuming $H/session when it holds an id; write the final
#     text to REPLY and the session's id to $H/session; set err (one line,
#     empty on success).
# An interrupt (C-c: SIGINT to the terminal's foreground group, the CLI
# included) settles the turn at once with error=interrupted.
intr=0 tick=0
POLL_S=${MU_ADAPTER_POLL_S:-5}
trap 'intr=1' INT
trap 'tick=1' USR1
ticker=
if [ "$POLL_S" -gt 0 ]; then
	me=$$
	(while sleep "$POLL_S"; do kill -USR1 "$me" 2>/dev/null || exit 0; done) &
	ticker=$!
fi
trap '[ -n "$ticker" ] && kill "$ticker" 2>/dev/null' EXIT
stty -echo 2>/dev/null

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
