# stop: no arguments. Fences the key, kills the job's process group and
# every process carrying its mark, and proves none is left.
mkdir -p "$d" || { say "ERR cannot create $d"; exit 1; }
lock
: >"$d/stopped"
i=0
while :; do
	a=$(alive)
	case $a in err:*) say "ERR ${a#err:}"; exit 1 ;; esac
	if [ "$a" = yes ]; then
		pg=$(t display-message -p -t "=$sess:" '#{pane_pid}' 2>/dev/null)
		[ -n "$pg" ] && kill -9 -"$pg" 2>/dev/null
		t kill-session -t "=$sess" 2>/dev/null
	fi
	left=$(marked)
	# shellcheck disable=SC2086 # a list of pids, split on purpose
	[ -n "$left" ] && kill -9 $left 2>/dev/null
	if [ "$a" = no ] && [ -z "$left" ]; then say "gone 1"; exit 0; fi
	i=$((i + 1))
	[ $i -ge 100 ] && { say "alive $(oneline "$left")"; exit 0; }
	sleep 0.05
done
