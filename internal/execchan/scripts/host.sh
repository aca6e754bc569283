# host.sh DEADLINE IDLE: a host's main process (a container's command
# under the Engine's init, a pod's container), so that the terms its
# acquire reported hold with no daemon watching: it exits 0, and the host
# ends, at DEADLINE (seconds since the epoch; 0: none) or once the host has
# been idle for IDLE seconds (0: never). With neither it only sleeps.
# Idle: no exec-channel request began (agent.sh creates /tmp/.mu-activity
# for each) and no process was busy, looked at every second. Busy is any
# process but PID 1 (the init), this loop and its sleep, an exec session's
# own shell (its parent is outside the sandbox: PPid 0; a run it started
# is its child, so it counts) and a zombie: a run, its leftovers, a job's
# tmux server and wrapper all count. TERM or INT: exit 143 at once.
dl=$1 idle=$2 a=/tmp/.mu-activity s=
[ "$dl" -gt 0 ] || [ "$idle" -gt 0 ] || exec sleep infinity
trap 'exit 143' TERM INT
# busy: some process of the sandbox is at work (see above).
busy() {
	for b_d in /proc/[0-9]*; do
		b_p=${b_d#/proc/}
		case $b_p in 1 | "$$" | "$s") continue ;; esac
		b_s='' b_pp=''
		while read -r b_k b_v _; do
			case $b_k in
			State:) b_s=$b_v ;;
			PPid:) b_pp=$b_v; break ;;
			esac
		done 2>/dev/null <"$b_d/status" || continue
		[ -n "$b_pp" ] && [ "$b_pp" != 0 ] && [ "$b_s" != Z ] && return 0
	done
	return 1
}
last=$(date +%s) || exit 3
while :; do
	sleep 1 & s=$!
	wait "$s"
	now=$(date +%s) || exit 3
	if [ "$dl" -gt 0 ] && [ "$now" -ge "$dl" ]; then
		echo "mu: the host's deadline passed: it ends" >&2; exit 0
	fi
	[ "$idle" -gt 0 ] || continue
	if [ -e "$a" ]; then
		rm -f "$a"; last=$now
	elif busy; then
		last=$now
	fi
	if [ $((now - last)) -ge "$idle" ]; then
		echo "mu: the host was idle for ${idle}s: it ends" >&2; exit 0
	fi
done
