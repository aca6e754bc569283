# start: $1 key, $2 agent (ws/name), $3 cwd, $4 the job's command line, $5
# wrapper text, $6 pipe-pane command, $7 the harness adapter ("": none), $8
# the role, $9 readin's word for stdin; stdin: the env file (its values may
# be secrets: they never travel as arguments).
key=$1 agent=$2 cwd=$3 cmd=$4 wrap=$5 pipecmd=$6 piped=0
[ -d "$root/jobs" ] || mkdir -p "$root/jobs" || { say "ERR cannot create $root/jobs"; exit 1; }
# A new job's directory and its channel's in one mkdir (one exec, not two):
# made before the lock, they hold nothing yet.
if mkdir "$d" "$c" "$c/inbox" "$c/answers" "$c/out" "$c/out/turns" 2>/dev/null; then say "claimed 1"; fi
[ -d "$d" ] || { say "ERR cannot create $d"; exit 1; }
lock
[ -e "$d/fenced" ] && { say "refused fenced"; exit 0; }
[ -e "$d/stopped" ] && { say "refused stopped"; exit 0; }
if [ ! -e "$d/started" ]; then
	# No tmux at all is refused before anything is written; any other
	# failure of tmux is new-session's, below.
	command -v tmux >/dev/null 2>&1 || {
		say "remedy install tmux 3.2 or later on the host (Debian, Ubuntu: apt-get install tmux; Alpine: apk add tmux)"
		say "notdone human tmux is not installed on the host"
		exit 0
	}
	# Any write that fails ends the chain in the one error below.
	# shellcheck disable=SC2015
	printf '%s' "$key" >"$d/key" &&
		printf '%s' "$agent" >"$d/agent" &&
		printf '%s' "$cwd" >"$d/cwd" &&
		printf '%s' "$cmd" >"$d/cmd" &&
		printf '%s' "$wrap" >"$d/wrap" &&
		readin "${9:-0}" "$d/env" &&
		# $7: a harness adapter's program ("": none; adapters.go), $8: the role.
		{ [ -z "${7:-}" ] || { printf '%s' "$7" >"$d/harness" && printf '%s' "${8:-}" >"$d/role"; }; } &&
		{ { [ -d "$c/inbox" ] && [ -d "$c/answers" ] && [ -d "$c/out/turns" ]; } ||
			mkdir -p "$c/inbox" "$c/answers" "$c/out/turns"; } &&
		: >"$d/log" || { say "ERR cannot write the job's files in $d"; exit 1; }
	# started is the commit: written before the session, so a start that
	# dies half-way is never run a second time (it reads lost instead).
	: >"$d/started"
	# The session and its log's pipe in one tmux client. When the pair
	# fails with the session made (its pipe-pane failed), the block below
	# pipes it again, alone, and says why it cannot. A server whose last
	# session just ended (another job's stop) exits as we connect: "server
	# exited unexpectedly". Nothing was made: try again.
	n=0
	until e=$(t new-session -d -s "$sess" -x 160 -y 48 -e "MU_CHANNEL_DIR=$c" -- /bin/sh "$d/wrap" "$d" \; \
		pipe-pane -t "=$sess:" -o "$pipecmd" 2>&1) && piped=1; do
		[ "$(alive)" = yes ] && break
		n=$((n + 1))
		case $e in
		*"server exited unexpectedly"* | *"lost server"*) [ "$n" -lt 10 ] && { sleep 0.1; continue; } ;;
		esac
		rm -f "$d/started"
		say "ERR tmux new-session: $(oneline "$e")"
		exit 1
	done
	say "new 1"
fi
if [ ! -e "$d/go" ]; then
	# A session that is already gone (its command ended at once) has no
	# pane to pipe: only a live one's failure is an error.
	if [ "$piped" != 1 ] && ! e=$(t pipe-pane -t "=$sess:" -o "$pipecmd" 2>&1) && [ "$(alive)" = yes ]; then
		say "ERR tmux pipe-pane: $(oneline "$e")"
		exit 1
	fi
	: >"$d/go"
fi
say "ok 1"
