# status: no arguments.
[ -d "$d" ] || { say "lost no job under this key on the host"; exit 0; }
a=$(alive)
case $a in
yes) say "running 1"; exit 0 ;;
err:*) say "unknown ${a#err:}"; exit 0 ;;
esac
if [ -f "$d/exit" ]; then say "ended $(cat "$d/exit")"; exit 0; fi
[ -e "$d/stopped" ] && { say "stopped 1"; exit 0; }
[ -e "$d/started" ] && { say "lost the job's tmux session is gone and it recorded no exit code (the host or its tmux server restarted?)"; exit 0; }
[ -e "$d/fenced" ] && { say "lost the job was never started (its key is fenced)"; exit 0; }
say "lost the job was never started"
