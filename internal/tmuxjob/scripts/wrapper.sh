# mu job wrapper (tmuxjob): runs the job's command, records its exit code.
d=$1
# go: the start is done (the log's pipe is on). The start holds the job's
# lock until it exits, just after it writes go: so wait for the lock (one
# exec, woken by the start's exit, not a look every 5 ms), let it go at
# once, and only then, should go still be missing (a start that failed),
# look every 5 ms.
if [ ! -e "$d/go" ]; then
	{ flock -w 10 9; } 9>>"$d/lock" 2>/dev/null
fi
while [ ! -e "$d/go" ]; do sleep 0.005; done
printf '%s\n' "$$" >"$d/pid"
# self: this shell's pid and start time (/proc/PID/stat's field 22), so a
# delivery can see it still runs without asking tmux (lib.sh: wrapper_runs).
if read -r st <"/proc/$$/stat" 2>/dev/null; then
	set -f
	# shellcheck disable=SC2086 # the fields after "(comm) ", split on purpose
	set -- ${st##*) }
	set +f
	# Written in place (no mv: one exec less before the command starts): a
	# read that finds it empty or cut short matches no process, and the
	# reader asks tmux instead.
	printf '%s %s\n' "$$" "${20}" >"$d/self"
fi
# mu_file FILE: mu_f is the file's text as "$(cat FILE)" would give it
# (trailing newlines dropped), read with builtins: one fork and exec less
# before the command starts. The files were written from arguments: no NUL.
mu_file() {
	mu_f='' mu_l=''
	while IFS= read -r mu_l; do mu_f="$mu_f$mu_l
"; done <"$1"
	mu_f=$mu_f$mu_l
	while :; do case $mu_f in *"
") mu_f=${mu_f%"
"} ;; *) break ;; esac; done
}
# cwd before the job's env, as cwd was always set after it.
mu_file "$d/cwd"
mu_cwd=$mu_f
# shellcheck source=/dev/null # the job's env file, written by its start
. "$d/env"
cwd=$mu_cwd
if [ -n "$cwd" ] && ! cd -- "$cwd"; then
	echo "mu: cannot enter $cwd" >&2
	rc=126
elif [ -f "$d/harness" ]; then
	# A harness adapter (docs/harness.md "Adapters") runs the command.
	/bin/sh "$d/harness" "$d"
	rc=$?
else
	# cmd read where it always was: after the env (mu_f is set afresh).
	mu_file "$d/cmd"
	/bin/sh -c "$mu_f"
	rc=$?
fi
printf '%s\n' "$rc" >"$d/exit.tmp" && mv -f "$d/exit.tmp" "$d/exit"
