# wait: $1 incarnation, $2 turn number, $3 at most this many looks, $4 the
# look interval (seconds, e.g. 0.05), $5 their product (the run's bound, in
# seconds), $6 the largest record emitted whole (turn.sh). Waits on the host, in one run of at most $5 seconds, until turn $2 of $1 has a record or the incarnation
# is another; then emits the state and the record. "timeout 1" when neither
# came.
#
# It wakes on the change itself where it can: GNU tail -F follows
# out/state through inotify, so the harness's rename of the state wakes it
# within a millisecond or two (where inotify cannot be used, tail itself
# looks every 10 ms, without a fork per look: on a FUSE root, e.g. Docker's
# fuse-overlayfs, GNU tail takes the file for a remote one; with
# --max-unchanged-stats=0 each look also checks whether the name is now
# another file, where by default only every sixth does: a rename was seen
# 11-66 ms late); each line tail prints is only a wake-up, the state is
# then read from the file. Its stderr is a wake-up too: polling, tail says
# the state "has been replaced" one look (10 ms) before it reads the new
# file. Without GNU tail
# and timeout it looks every $4 seconds (one sleep per look).
inc=$1 n=$2 polls=$3 every=$4 secs=$5 inl=$6
[ -e "$d/started" ] || { say "nojob 1"; exit 0; }
# settled: the state and turn $n's record, when the wait is over.
settled() {
	readstate "$c/out/state" || return 1
	[ -f "$c/out/turns/$inc.$n" ] || [ "$st_inc" != "$inc" ] || return 1
	saystate
	emitturn "$c/out/turns/$inc.$n" "$inc.$n"
	say "ok 1"
}
settled && exit 0
if command -v timeout >/dev/null 2>&1 && case $(tail --version 2>/dev/null) in *GNU*) true ;; *) false ;; esac; then
	tmpdir
	mkfifo "$T/wake" || { say "ERR mkfifo failed"; exit 1; }
	# --foreground: timeout stays in the run's process group.
	marked_bg "$T/wake" timeout --foreground "$secs" tail -n +1 -F -s 0.01 --max-unchanged-stats=0 "$c/out/state"
	tp=$!
	# The fifo open at both ends (this open waits for tail's), its
	# directory goes now, while nothing has changed: not on the wake's
	# path (an rm at exit, after the answer).
	exec 3<"$T/wake"
	rm -rf "$T"
	T=
	while IFS= read -r _; do
		# Not waited for: it dies on its own (and carries the mark).
		settled && { kill "$tp" 2>/dev/null; exit 0; }
	done <&3
	settled && exit 0
	say "timeout 1"
	exit 0
fi
i=1
while [ "$i" -lt "$polls" ]; do
	sleep "$every"
	settled && exit 0
	i=$((i + 1))
done
say "timeout 1"
