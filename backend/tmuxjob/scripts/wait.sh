# wait: $1 incarnation, $2 turn number, $3 at most this many polls, $4 the
# poll interval (seconds, e.g. 0.05). Waits on the host, in one run, until
# turn $2 of $1 has a record or the incarnation is another; then emits the
# state and the record. "timeout 1" when neither came.
inc=$1 n=$2 polls=$3 every=$4
[ -e "$d/started" ] || { say "nojob 1"; exit 0; }
i=0
while :; do
	if readstate "$c/out/state"; then
		if [ -f "$c/out/turns/$inc.$n" ] || [ "$st_inc" != "$inc" ]; then
			printf '@state '
			printf '%s' "$st_all" | base64 | tr -d '\n'
			printf '\n'
			emit turn "$c/out/turns/$inc.$n"
			say "ok 1"
			exit 0
		fi
	fi
	i=$((i + 1))
	[ "$i" -ge "$polls" ] && { say "timeout 1"; exit 0; }
	sleep "$every"
done
