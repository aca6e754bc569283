# receipt: $1 the delivery's hash (its msgId's), $2 the nudge token, $3 how
# long to wait for the job's lock (seconds). Under the lock, so a delivery
# already writing finishes first: accepted when its entry is in the inbox;
# else not-accepted, and final: the hash is fenced (notaccepted/<hash>),
# and deliver.sh refuses a fenced hash. A job not started yet is fenced
# the same way. An accepted delivery the harness has not taken yet is
# nudged again (the harness takes each delivery once, so a second nudge
# delivers nothing twice).
h=$1 token=$2 wait=$3
[ -d "$d" ] || mkdir -p "$d" || { say "ERR cannot create $d"; exit 1; }
lock "$wait"
e=
if [ -e "$d/started" ]; then
	for x in "$c/inbox"/[0-9]*."$h"; do
		[ -e "$x" ] && e=${x##*/}
		break
	done
fi
if [ -z "$e" ]; then
	# shellcheck disable=SC2015 # either step failing is the one error below
	{ [ -d "$d/notaccepted" ] || mkdir "$d/notaccepted"; } && : >"$d/notaccepted/$h" ||
		{ say "ERR cannot record the not-accepted fence"; exit 1; }
	say "none 1"
	exit 0
fi
say "accepted ${e%%.*}"
emitv baseline "$c/inbox/$e/baseline"
emitv inc "$c/inbox/$e/inc"
emitv at "$c/inbox/$e/at"
readstate "$c/out/state"
num "$e"
if [ "$N" -gt "$st_cursor" ] && [ "$(alive)" = yes ] && { [ ! -e "$d/quiet" ] || [ "$st_state" = idle ]; }; then
	t send-keys -t "=$sess:" -l "$token" \; send-keys -t "=$sess:" Enter && say "nudged 1"
fi
exit 0
