# lookup: $1 fence (0 or 1), $2 the pipe-pane command (to finish a start
# that died between its session and its go).
fence=$1 pipecmd=$2
if [ ! -d "$d" ]; then
	[ "$fence" = 1 ] || { say "none 1"; exit 0; }
	mkdir -p "$d" || { say "ERR cannot create $d"; exit 1; }
fi
lock
if [ -e "$d/started" ]; then
	if [ ! -e "$d/go" ]; then
		a=$(alive)
		case $a in err:*) say "ERR ${a#err:}"; exit 1 ;; esac
		if [ "$a" = yes ]; then
			e=$(t pipe-pane -t "=$sess:" -o "$pipecmd" 2>&1) || { say "ERR tmux pipe-pane: $(oneline "$e")"; exit 1; }
		fi
		: >"$d/go"
	fi
	say "found 1"
	exit 0
fi
[ "$fence" = 1 ] && : >"$d/fenced"
say "none 1"
