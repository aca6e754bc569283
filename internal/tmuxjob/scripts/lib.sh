# lib.sh: the prelude of every tmuxjob script. It is never spliced with
# data: every value arrives as an argument ("$@") or on stdin.
#   $1 the state root, $2 the job id (hex), $3 the tmux socket; the
#   operation's own arguments follow.
# Output is line-based: "KEY value" lines, and blobs: "@KEY", the bytes'
# base64 in lines, then "@" (or "@KEY <base64>" on one line).
# The runners' marks (internal/proc, internal/execchan's pooled runs) must not
# reach the tmux server a script starts: a run's cleanup would kill it. They
# are kept aside for a helper that must die with the run (marked_bg).
mk_plugin=${MU_PLUGIN_RUN-} mk_exec=${MU_EXEC_RUN-}
unset MU_PLUGIN_RUN MU_EXEC_RUN
# marked_bg OUT CMD ARGS...: CMD in the background, its stdout and stderr
# to OUT (opened there, so a FIFO's open does not block this shell), with
# the run's marks back: a run that is stopped or cancelled stops it too.
marked_bg() {
	(
		o=$1
		shift
		[ -z "$mk_plugin" ] || export MU_PLUGIN_RUN="$mk_plugin"
		[ -z "$mk_exec" ] || export MU_EXEC_RUN="$mk_exec"
		exec "$@" >"$o" 2>&1
	) &
}
umask 077
export LC_ALL=C
root=$1 id=$2 sock=$3
shift 3
d=$root/jobs/$id
c=$d/chan
sess=mu-$id
T=
cleanup() { [ -n "$T" ] && rm -rf "$T"; }
trap cleanup EXIT
tmpdir() { [ -n "$T" ] || T=$(mktemp -d) || { say "ERR mktemp failed"; exit 1; }; }

say() { printf '%s\n' "$*"; }
oneline() { printf '%s' "$*" | tr '\n\r' '  '; }
# emit KEY FILE: the file's bytes, read once, as a base64 blob: base64's
# own lines between "@KEY" and "@" (no tr to join them: one exec less).
emit() {
	[ -f "$2" ] || return 0
	printf '@%s\n' "$1"
	base64 <"$2"
	printf '@\n'
}
# emitv KEY FILE: a file this plugin wrote from an argument (no NUL), as
# "KEY <its bytes>" when they are one line without a control character,
# read with builtins (no fork); else as emit does. The caller takes either
# (out.data).
emitv() {
	[ -f "$2" ] || return 0
	v=
	# read succeeds only when it meets a newline: then more than one line.
	if IFS= read -r v <"$2"; then emit "$1" "$2"; return; fi
	case $v in *[[:cntrl:]]*) emit "$1" "$2" ;; *) say "$1 $v" ;; esac
}
# sayfile KEY FILE: "KEY <the file's first line>" with builtins, for a file
# of one line that holds no NUL (a number, an inc); nothing when it is
# missing.
sayfile() {
	[ -f "$2" ] || return 0
	v=
	IFS= read -r v <"$2" || [ -n "$v" ] || return 0
	say "$1 $v"
}
# saystate: the state readstate read (st_all), as "state 1" and then one
# "S <line>" a line, with builtins: its lines hold no newline and st_all no
# NUL, so no base64 (three forks a read).
saystate() {
	say "state 1"
	r=$st_all
	while [ -n "$r" ]; do
		say "S ${r%%"
"*}"
		r=${r#*"
"}
	done
}
# readin IN FILE: stdin to FILE, byte for byte: with builtins (each line,
# then the rest: no fork) when IN is 1 (Go's word that it is short and
# holds no NUL: readIn), else with cat.
readin() {
	if [ "$1" = 1 ]; then
		ri_t='' ri_l=''
		while IFS= read -r ri_l; do ri_t="$ri_t$ri_l
"; done
		printf '%s' "$ri_t$ri_l" >"$2"
	else
		cat >"$2"
	fi
}
# t runs tmux without the lock's descriptor: a tmux server it starts must
# not hold the job's lock for its whole life.
t() { tmux -S "$sock" -f /dev/null "$@" 9>&-; }
# lock [SECONDS]: the job's lock (flock on $d/lock), waiting at most
# SECONDS (default 20; fractions allowed).
# shellcheck disable=SC2120 # SECONDS is optional: most operations wait 20 s
lock() {
	exec 9>>"$d/lock" || { say "ERR cannot open $d/lock"; exit 1; }
	flock -w "${1:-20}" 9 || { say "busy the job's lock is held"; exit 0; }
}
# alive: yes, no, or err:<why> for the job's tmux session.
alive() {
	command -v tmux >/dev/null 2>&1 || { echo "err:tmux is not installed on the host"; return; }
	if e=$(t has-session -t "=$sess" 2>&1); then echo yes; return; fi
	case $e in
	*"can't find session"* | *"no current target"* | *"no server running"* | *"error connecting to"*"No such file"* | *"error connecting to"*"Connection refused"* | *"server exited unexpectedly"*) echo no ;;
	*) echo "err:$(oneline "$e")" ;;
	esac
}
# wrapper_runs: the job's wrapper (the pane's process) still runs: its pid
# and start time are the ones it recorded, and it is no zombie. The session
# lives while it does (its pane's process). Builtins only; false when it
# cannot tell (no /proc, no record yet): then ask tmux.
wrapper_runs() {
	[ -f "$d/self" ] && [ ! -e "$d/exit" ] || return 1
	read -r wp ws <"$d/self" || return 1
	read -r st <"/proc/$wp/stat" 2>/dev/null || return 1
	set -f
	# shellcheck disable=SC2086 # the fields after "(comm) ", split on purpose
	set -- ${st##*) }
	set +f
	case $1 in Z | X | x) return 1 ;; esac
	[ "${20}" = "$ws" ]
}
# marked: the pids of the processes whose environment carries the job's
# mark (MU_CHANNEL_DIR=$c), which every process of the job inherits.
marked() {
	grep -lzxF -- "MU_CHANNEL_DIR=$c" /proc/[0-9]*/environ 2>/dev/null |
		sed -n 's|^/proc/\([0-9]*\)/environ$|\1|p' | grep -vx "$$" || true
}
# val KEY FILE: the first KEY=value line's value.
val() { sed -n "s/^$1=//p" "$2" | head -n 1; }
# readstate FILE: the harness's state into st_* and st_all, from one open
# of the file (one snapshot), with builtins only.
readstate() {
	st_inc='' st_state='' st_runs=0 st_cursor=0 st_since='' st_all=''
	[ -f "$1" ] || return 1
	while IFS= read -r l || [ -n "$l" ]; do
		st_all="$st_all$l
"
		case $l in
		inc=*) st_inc=${l#inc=} ;;
		state=*) st_state=${l#state=} ;;
		runs=*) st_runs=${l#runs=} ;;
		cursor=*) st_cursor=${l#cursor=} ;;
		since=*) st_since=${l#since=} ;;
		esac
	done <"$1"
	num "$st_cursor"
	st_cursor=$N
}
# num NAME: N is the decimal sequence number NAME starts with (leading
# zeros dropped, so arithmetic never reads it as octal).
num() {
	N=${1%%.*}
	N=${N#"${N%%[!0]*}"}
	N=${N:-0}
}
# entries DIR: E is the last (newest) entry, Q how many are past $st_cursor.
# The entries are numbered 1, 2, … without a gap (each delivery takes the
# last number + 1, under the lock, and none is ever removed): when their
# count is the last one's number, Q is that number past the cursor, with no
# look at each entry (a job's queue grows all its life: a loop over 2,000
# entries is 40 ms). Anything else is counted one by one.
entries() {
	E='' Q=0
	set -- "$1"/[0-9]*
	[ -e "$1" ] || return 0
	eval "E=\${$#}"
	E=${E##*/}
	num "$E"
	if [ "$N" = "$#" ]; then
		Q=$((N > st_cursor ? N - st_cursor : 0))
		return 0
	fi
	for x in "$@"; do
		[ -e "$x" ] || continue
		num "${x##*/}"
		[ "$N" -gt "$st_cursor" ] && Q=$((Q + 1))
	done
	num "$E"
}
