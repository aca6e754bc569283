#!/bin/sh
# mu-test-agent: a scripted agent that follows mu's harness contract
# (docs/harness.md), for tests. It runs in the job's terminal as spec.cmd,
# like a coding-agent CLI: it waits for a line on its terminal (the nudge),
# then takes the deliveries in its inbox, one turn each, in order.
#
# Markers in a delivery's text steer it:
#   [[ms:N]]      work N ms (default: $MU_TEST_AGENT_MS, else 200)
#   [[block:Q]]   half-way through, block on question Q until answered
#   [[commit]]    commit a file (mu-agent.txt) in its cwd before settling
#   [[error:E]]   settle with the error E
#   [[restart]]   restart the harness (a new incarnation) instead of settling
#   [[exit:N]]    exit with code N (the job ends)
# Besides a nudge, it looks at its inbox every $MU_TEST_AGENT_POLL_S
# seconds (default 5; 0: never).
# A turn settles with the final text "agent: " and the delivery's text,
# byte for byte; a command's with "agent: /NAME " and its instructions.
set -u
C=${MU_CHANNEL_DIR:?MU_CHANNEL_DIR is not set: run me as a mu job}
IN=$C/inbox ANS=$C/answers OUT=$C/out
mkdir -p "$OUT/turns" "$OUT/tmp" || exit 1
DEF_MS=${MU_TEST_AGENT_MS:-200}

now() {
	t=$(date +%s%3N)
	case $t in *N*) t=$(($(date +%s) * 1000)) ;; esac
	echo "$t"
}
seqof() {
	s=$(echo "${1%%.*}" | sed 's/^0*//')
	echo "${s:-0}"
}
# ls lists the entries sorted; their names are sequence numbers mu writes.
# shellcheck disable=SC2012
next_in() { ls "$IN" | awk -F. -v cur="$cursor" '$1+0 > cur+0 {print; exit}'; }
# shellcheck disable=SC2012
next_ans() { ls "$ANS" | awk -F. -v cur="$acursor" '$1+0 > cur+0 {print; exit}'; }
marker() { sed -n "s/.*\[\[$1:\([$2]*\)\]\].*/\1/p" "$3" | head -n 1; }

# The state file: written whole, then renamed, so a reader sees one snapshot.
write_state() {
	printf 'inc=%s\nstate=%s\nsince=%s\nruns=%s\ncursor=%s\nacursor=%s\nmsg=%s\npending=%s\n' \
		"$inc" "$state" "$since" "$runs" "$cursor" "$acursor" "$msg" "$pending" >"$OUT/tmp/state.$$" &&
		mv -f "$OUT/tmp/state.$$" "$OUT/state"
}
# settle FILE ERROR: the turn's record first, then the state that counts it.
settle() {
	n=$((runs + 1))
	at=$(now)
	{
		printf 'at=%s\nmsg=%s\nerror=%s\n\n' "$at" "$msg" "$2"
		cat "$1"
	} >"$OUT/tmp/turn.$$" && mv -f "$OUT/tmp/turn.$$" "$OUT/turns/$inc.$n"
	runs=$n state=idle since=$at msg='' pending=''
	write_state
	echo "[settled turn $n${2:+ ($2)}]"
}
work() {
	[ "$intr" = 1 ] && return 1
	sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"
	[ "$intr" = 0 ]
}
# wait_line: wait for a line on the terminal (a nudge) or a tick. It
# fails on an interrupt, and ends the agent at the terminal's EOF.
wait_line() {
	tick=0
	read -r _
	rc=$?
	[ "$intr" = 1 ] && return 1
	[ $rc -ne 0 ] && [ "$tick" = 0 ] && exit 0
	return 0
}
# wait_answer: block until an answer arrives (or an interrupt).
wait_answer() {
	while :; do
		a=$(next_ans)
		if [ -n "$a" ]; then
			acursor=$(seqof "$a")
			answer=$(tr '\n' ' ' <"$ANS/$a/text")
			return 0
		fi
		wait_line || return 1
	done
}
# The ticker wakes the agent every MU_TEST_AGENT_POLL_S seconds (default
# 5; 0: never), so a delivery whose nudge was lost is still taken.
start_ticker() {
	ticker=
	[ "$POLL_S" -gt 0 ] || return 0
	me=$$
	(while sleep "$POLL_S"; do kill -USR1 "$me" 2>/dev/null || exit 0; done) &
	ticker=$!
}
stop_ticker() {
	[ -n "$ticker" ] || return 0
	kill "$ticker" 2>/dev/null
	wait "$ticker" 2>/dev/null
	ticker=
}

take_turn() {
	e=$1 d=$IN/$1
	kind=$(cat "$d/kind")
	cursor=$(seqof "$e") state=busy since=$(now) msg=$e pending=
	write_state
	r=$OUT/tmp/reply.$$
	case $kind in
	fresh) echo "--- fresh context ---" ;;
	command) echo "/$(cat "$d/name")" ;;
	esac
	printf '> '
	cat -v "$d/text"
	echo
	ms=$(marker ms 0-9 "$d/text")
	ms=${ms:-$DEF_MS}
	q=$(marker block 'A-Za-z0-9_.-' "$d/text")
	if [ -n "$q" ]; then
		if work $((ms / 2)); then
			state=blocked pending=$q since=$(now)
			write_state
			echo "? $q"
			if wait_answer; then
				state=busy pending='' since=$(now)
				write_state
				echo "answered: $answer"
			fi
		fi
		ms=$((ms - ms / 2))
	fi
	if ! work "$ms"; then
		: >"$r"
		settle "$r" interrupted
		return
	fi
	if grep -q '\[\[restart\]\]' "$d/text"; then
		echo "[restarting]"
		stop_ticker
		exec /bin/sh "$0"
	fi
	x=$(marker exit 0-9 "$d/text")
	[ -n "$x" ] && exit "$x"
	if grep -q '\[\[commit\]\]' "$d/text"; then
		cat "$d/text" >>mu-agent.txt && git add mu-agent.txt &&
			git -c user.name=mu-test-agent -c user.email=mu-test-agent@localhost commit -q -m "mu-test-agent: turn $((runs + 1))" &&
			echo "[committed $(git rev-parse --short HEAD)]"
	fi
	if [ "$kind" = command ]; then
		{
			printf 'agent: /%s ' "$(cat "$d/name")"
			cat "$d/text"
		} >"$r"
	else
		{
			printf 'agent: '
			cat "$d/text"
		} >"$r"
	fi
	cat -v "$r"
	echo
	settle "$r" "$(marker error 'A-Za-z0-9 _.-' "$d/text")"
}

intr=0 tick=0
POLL_S=${MU_TEST_AGENT_POLL_S:-5}
trap 'intr=1' INT
trap 'tick=1' USR1
trap 'stop_ticker' EXIT
start_ticker
stty -echo 2>/dev/null
# A new incarnation: runs from 0; the cursors go on from the last state.
inc=$(now)-$$-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
cursor=0 acursor=0
if [ -f "$OUT/state" ]; then
	cursor=$(sed -n 's/^cursor=//p' "$OUT/state")
	acursor=$(sed -n 's/^acursor=//p' "$OUT/state")
fi
cursor=${cursor:-0} acursor=${acursor:-0}
state=idle since=$(now) runs=0 msg='' pending=''
write_state
echo "mu test agent: ready (incarnation $inc)"
while :; do
	intr=0
	e=$(next_in)
	if [ -n "$e" ]; then
		take_turn "$e"
		continue
	fi
	a=$(next_ans)
	if [ -n "$a" ]; then
		acursor=$(seqof "$a")
		write_state
		echo "(an answer with nothing pending: ignored)"
		continue
	fi
	wait_line
done
