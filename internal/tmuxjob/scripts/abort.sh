# abort: the interrupt keys as arguments. Cuts the turn in progress.
[ -e "$d/started" ] || { say "refused nojob"; exit 0; }
a=$(alive)
case $a in err:*) say "ERR ${a#err:}"; exit 1 ;; no) say "refused notrunning"; exit 0 ;; esac
readstate "$c/out/state" || { say "refused notready"; exit 0; }
say "state $st_state"
case $st_state in busy | blocked) t send-keys -t "=$sess:" "$@" && say "sent 1" ;; esac
