# kill.sh: the function k MARK, shared by the channel's loop (agent.sh) and
# the stop of a timed-out run (stop.sh). It kills every process marked with
# run MARK (MU_EXEC_RUN=MARK in its environment, which every process the
# run starts inherits, even one that left the run's process group),
# repeating until none is left. It fails when some survive 100 rounds (1),
# or when the scan itself cannot run, e.g. no grep (3): "none left" is never
# assumed. grep exits 2 when a process vanished mid-scan or its environ is
# another user's; matches still print, and an empty list with status 1 or 2
# means none of ours is left.
# POSIX sh has no local variables: k's own are named k_* so that it never
# overwrites the loop's (agent.sh keeps its stdin file in f).
k() {
	k_i=0
	while [ "$k_i" -lt 100 ]; do
		k_p=$(grep -lsxz "MU_EXEC_RUN=$1" /proc/[0-9]*/environ); k_e=$?
		if [ -z "$k_p" ]; then
			[ "$k_e" -le 2 ] && return 0
			echo "scanning /proc failed ($k_e)" >&2; return 3
		fi
		for k_f in $k_p; do k_f=${k_f#/proc/}; kill -9 "${k_f%/environ}" 2>/dev/null; done
		k_i=$((k_i + 1))
	done
	return 1
}
