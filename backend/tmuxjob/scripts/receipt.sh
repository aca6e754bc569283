# receipt: $1 the delivery's hash, $2 the nudge token. An accepted
# delivery the harness has not taken yet is nudged again (the harness takes
# each delivery once, so a second nudge delivers nothing twice).
h=$1 token=$2
[ -e "$d/started" ] || { say "nojob 1"; exit 0; }
e=
for x in "$c/inbox"/[0-9]*."$h"; do
	[ -e "$x" ] && e=${x##*/}
	break
done
[ -n "$e" ] || { say "none 1"; exit 0; }
say "accepted ${e%%.*}"
emit baseline "$c/inbox/$e/baseline"
emit inc "$c/inbox/$e/inc"
emit at "$c/inbox/$e/at"
readstate "$c/out/state"
num "$e"
if [ "$N" -gt "$st_cursor" ] && [ "$(alive)" = yes ]; then
	t send-keys -t "=$sess:" -l "$token" \; send-keys -t "=$sess:" Enter && say "nudged 1"
fi
exit 0
