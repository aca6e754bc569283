# deliver: $1 kind (send fresh command interrupt answer), $2 the delivery's
# hash, $3 at (epoch ms), $4 msgId, $5 mode, $6 command name, $7 expected
# incarnation, $8 force (0/1), $9 the dedupe window (ms) of a command or an
# answer, $10 the nudge token, $11 1 when the text is short and holds no NUL
# (read with builtins), then the interrupt keys; stdin: the text.
# Hot path: builtins wherever they do.
kind=$1 h=$2 at=$3 msgid=$4 mode=$5 name=$6 expect=$7 force=$8 window=$9 token=${10} tin=${11}
shift 11
[ -e "$d/started" ] || { say "refused nojob"; exit 0; }
lock
# A msgId a receipt answered not-accepted for never lands (receipt.sh).
case $kind in command | answer) ;; *) [ -e "$d/notaccepted/$h" ] && { say "refused notaccepted"; exit 0; } ;; esac
[ -e "$d/stopped" ] && { say "refused stopped"; exit 0; }
# The session's liveness: its wrapper still running (no fork: the hot
# path), else one tmux client; only a failure asks alive for why (no
# session, or no tmux at all).
if ! wrapper_runs && ! t has-session -t "=$sess" 2>/dev/null; then
	a=$(alive)
	case $a in err:*) say "ERR ${a#err:}"; exit 1 ;; no) say "refused notrunning"; exit 0 ;; esac
fi
readstate "$c/out/state" || { say "refused notready"; exit 0; }
inc=$st_inc state=$st_state runs=$st_runs cursor=$st_cursor since=$st_since
q=$c/inbox
[ "$kind" = answer ] && q=$c/answers
# nudge [keys]: the interrupt keys (when given, and a turn is in progress),
# then the fixed token and Enter. Never the delivery's text.
nudge() {
	if [ $# -gt 0 ]; then
		case $state in busy | blocked) t send-keys -t "=$sess:" "$@" ;; esac
	fi
	# A harness that looks at its inbox itself when a turn ends (`quiet` in
	# the job's directory: the Claude Code adapter) is not nudged during
	# one: the keys would reach its dialog or its queued input.
	if [ -e "$d/quiet" ]; then case $state in busy | blocked) say "nudged 1" && return ;; esac; fi
	if t send-keys -t "=$sess:" -l "$token" \; send-keys -t "=$sess:" Enter; then say "nudged 1"; else say "nudged 0"; fi
}
entries "$q"
last=$E
lat=
[ -n "$last" ] && read -r lat <"$q/$last/at"
# A delivery already accepted is not delivered again: its record answers,
# and the harness is nudged again if it has not taken it (no keys again).
dup=
case $kind in
answer)
	# The same keys for the same dialog, or (no dialog now) the same keys
	# within the window: a resend.
	case $last in *".$h")
		if [ "$state" = blocked ]; then
			ldialog=
			[ -f "$q/$last/dialog" ] && read -r ldialog <"$q/$last/dialog"
			[ "$ldialog" = "$inc:$since" ] && dup=$last
		elif [ -n "$lat" ] && [ $((at - lat)) -lt "$window" ]; then
			dup=$last
		fi
		;;
	esac
	;;
command)
	case $last in *".$h")
		[ -n "$lat" ] && [ $((at - lat)) -lt "$window" ] && dup=$last ;;
	esac
	;;
*)
	for x in "$q"/[0-9]*."$h"; do
		[ -e "$x" ] && dup=${x##*/}
		break
	done
	;;
esac
if [ -n "$dup" ]; then
	say "dup ${dup%%.*}"
	# One line each, written by this script (digits; the state's inc, one
	# line): read with builtins, no base64.
	sayfile baseline "$q/$dup/baseline"
	sayfile inc "$q/$dup/inc"
	num "$dup"
	if [ "$kind" = answer ] || [ "$N" -gt "$cursor" ]; then nudge; fi
	exit 0
fi
if [ -n "$expect" ] && [ "$expect" != "$inc" ]; then say "refused incarnation $inc"; exit 0; fi
if [ "$kind" = answer ] && [ "$state" != blocked ] && [ "$force" != 1 ]; then say "refused notblocked $state"; exit 0; fi
queued=$Q
[ "$kind" = answer ] && { entries "$c/inbox"; queued=$Q; }
busy=0
case $state in busy | blocked) busy=1 ;; esac
baseline=$((runs + busy + queued))
num "$last"
seq=$((N + 1))
while [ ${#seq} -lt 10 ]; do seq=0$seq; done
# spare: e is an empty directory made ahead in the queue (hidden: a harness
# ignores it), so a delivery runs no mkdir of its own: one mkdir makes
# sixteen when none is left. One a killed delivery left half written is
# removed, not taken.
spare() {
	for x in "$q"/.spare.*; do
		[ -d "$x" ] || continue
		for y in "$x"/*; do
			[ -e "$y" ] && { rm -rf "$x"; continue 2; }
		done
		e=$x
		return 0
	done
	return 1
}
mkspares() {
	set --
	i=0
	while [ $i -lt 16 ]; do
		set -- "$@" "$q/.spare.$$.$i"
		i=$((i + 1))
	done
	mkdir "$@" 2>/dev/null
}
e=
# A delivery not written (nothing queued) is not done: retryable.
spare || { mkspares; spare; } || { say "notdone retryable cannot write the delivery in $q"; exit 0; }
# One chain, one rollback: any step failing removes the entry written aside.
# shellcheck disable=SC2015
printf '%s' "$kind" >"$e/kind" &&
	printf '%s' "$msgid" >"$e/msgid" &&
	printf '%s' "$mode" >"$e/mode" &&
	printf '%s' "$name" >"$e/name" &&
	printf '%s' "$at" >"$e/at" &&
	printf '%s' "$baseline" >"$e/baseline" &&
	printf '%s' "$inc" >"$e/inc" &&
	{ [ "$state" != blocked ] || printf '%s' "$inc:$since" >"$e/dialog"; } &&
	readin "$tin" "$e/text" || { rm -rf "$e"; say "notdone retryable cannot write the delivery in $q"; exit 0; }
mv "$e" "$q/$seq.$h" || { rm -rf "$e"; say "notdone retryable cannot commit the delivery in $q"; exit 0; }
say "accepted $seq"
say "baseline $baseline"
say "inc $inc"
say "state $state"
if [ "$kind" = interrupt ]; then nudge "$@"; else nudge; fi
