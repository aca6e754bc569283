# kill.sh: the function k MARK, shared by the channel's loop (agent.sh) and
# the stop of a timed-out run (stop.sh). It kills every process marked with
# run MARK (MU_DOCKER_RUN=MARK in its environment, which every process the
# run starts inherits, even one that left the run's process group),
# repeating until none is left. It fails when some survive 100 rounds (1),
# or when the scan itself cannot run, e.g. no grep (3): "none left" is never
# assumed. grep exits 2 when a process vanished mid-scan or its environ is
# another user's; matches still print, and an empty list with status 1 or 2
# means none of ours is left.
k() {
	i=0
	while [ "$i" -lt 100 ]; do
		p=$(grep -lsxz "MU_DOCKER_RUN=$1" /proc/[0-9]*/environ); e=$?
		if [ -z "$p" ]; then
			[ "$e" -le 2 ] && return 0
			echo "scanning /proc failed ($e)" >&2; return 3
		fi
		for f in $p; do f=${f#/proc/}; kill -9 "${f%/environ}" 2>/dev/null; done
		i=$((i + 1))
	done
	return 1
}
