# abort: the interrupt keys as arguments. Cuts the turn in progress.
[ -e "$d/started" ] || { say "refused nojob"; exit 0; }
a=$(alive)
case $a in err:*) say "ERR ${a#err:}"; exit 1 ;; no) say "refused notrunning"; exit 0 ;; esac
[ -f "$c/out/state" ] || { say "refused notready"; exit 0; }
state=$(val state "$c/out/state")
say "state $state"
case $state in busy | blocked) t send-keys -t "=$sess:" "$@" && say "sent 1" ;; esac
