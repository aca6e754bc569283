# wait: $1 at most this many looks, $2 the look interval (seconds, e.g.
# 0.05), $3 their product (the run's bound, in seconds), then one triple a
# watch: a job id, an incarnation, a turn number. It waits, in one run of
# at most $3 seconds, for all of a host's watches at once (Watches: one
# run, so one SSH session, however many watch), until for one of them turn
# N of INC has a record, the incarnation is another or the job is gone;
# then it prints "ready I" for each such triple I (from 0), and the caller
# reads what it needs. "timeout 1" when none came.
#
# It wakes on the change itself where it can: GNU tail -F follows every
# watched out/state through inotify, so the harness's rename of a state
# wakes it within a millisecond or two (where inotify cannot be used, tail
# itself looks every 10 ms, without a fork per look: on a FUSE root, e.g.
# Docker's fuse-overlayfs, GNU tail takes the file for a remote one; with
# --max-unchanged-stats=0 each look also checks whether the name is now
# another file, where by default only every sixth does: a rename was seen
# 11-66 ms late). Each line tail prints is only a wake-up: a header
# "==> FILE <==" (or the lines after it) checks that file's watches, its
# stderr (a file replaced, or appeared) every watch; the state is then
# read from the file. Without GNU tail and timeout it looks every $2
# seconds (one sleep per look).
polls=$1 every=$2 secs=$3
shift 3
# ready ID INC N: the job is gone, or turn N of INC has a record, or the
# incarnation is another.
ready() {
	[ -e "$root/jobs/$1/started" ] || return 0
	readstate "$root/jobs/$1/chan/out/state" || return 1
	[ -f "$root/jobs/$1/chan/out/turns/$2.$3" ] || [ "$st_inc" != "$2" ]
}
# check FILE TRIPLES…: "ready I" for each ready triple (FILE "": every
# one; else those whose state is FILE). True when one was.
check() {
	f=$1 i=0 hit=
	shift
	while [ $# -ge 3 ]; do
		if [ -z "$f" ] || [ "$f" = "$root/jobs/$1/chan/out/state" ]; then
			ready "$1" "$2" "$3" && { say "ready $i"; hit=1; }
		fi
		i=$((i + 1))
		shift 3
	done
	[ -n "$hit" ]
}
# follow TRIPLES…: tail -F over the triples' state files (each job's
# once), into the fifo.
follow() {
	k=0 seen=' '
	for a; do
		if [ $((k % 3)) -eq 0 ]; then
			case $seen in *" $a "*) ;; *)
				seen="$seen$a "
				set -- "$@" "$root/jobs/$a/chan/out/state"
				;;
			esac
		fi
		k=$((k + 1))
	done
	shift "$k"
	# --foreground: timeout stays in the run's process group.
	marked_bg "$T/wake" timeout --foreground "$secs" tail -n +1 -F -s 0.01 --max-unchanged-stats=0 "$@"
}
check "" "$@" && exit 0
if command -v timeout >/dev/null 2>&1 && case $(tail --version 2>/dev/null) in *GNU*) true ;; *) false ;; esac; then
	tmpdir
	mkfifo "$T/wake" || { say "ERR mkfifo failed"; exit 1; }
	follow "$@"
	tp=$!
	# The fifo open at both ends (this open waits for tail's), its
	# directory goes now, while nothing has changed: not on the wake's
	# path (an rm at exit, after the answer).
	exec 3<"$T/wake"
	rm -rf "$T"
	T=
	cur=
	while IFS= read -r l; do
		case $l in
		"==> "*" <==")
			cur=${l#"==> "}
			cur=${cur%" <=="}
			;;
		"tail: "*) cur= ;;
		esac
		# Not waited for: it dies on its own (and carries the mark).
		check "$cur" "$@" && { kill "$tp" 2>/dev/null; exit 0; }
	done <&3
	check "" "$@" && exit 0
	say "timeout 1"
	exit 0
fi
i=1
while [ "$i" -lt "$polls" ]; do
	sleep "$every"
	check "" "$@" && exit 0
	i=$((i + 1))
done
say "timeout 1"
