# tail: $1 offset, $2 max bytes. The log from offset, and whether the job
# still runs.
off=$1 max=$2
[ -d "$d" ] || { say "nojob 1"; exit 0; }
a=$(alive)
case $a in err:*) say "ERR ${a#err:}"; exit 1 ;; esac
say "alive $a"
[ -f "$d/exit" ] && say "exit $(cat "$d/exit")"
tmpdir
tail -c +$((off + 1)) "$d/log" 2>/dev/null | head -c "$max" >"$T/chunk"
emit data "$T/chunk"
