# mu job wrapper (tmuxjob): runs the job's command, records its exit code.
d=$1
while [ ! -e "$d/go" ]; do sleep 0.005; done
printf '%s\n' "$$" >"$d/pid"
# self: this shell's pid and start time (/proc/PID/stat's field 22), so a
# delivery can see it still runs without asking tmux (lib.sh: wrapper_runs).
if read -r st <"/proc/$$/stat" 2>/dev/null; then
	set -f
	# shellcheck disable=SC2086 # the fields after "(comm) ", split on purpose
	set -- ${st##*) }
	set +f
	printf '%s %s\n' "$$" "${20}" >"$d/self.tmp" && mv -f "$d/self.tmp" "$d/self"
fi
# shellcheck source=/dev/null # the job's env file, written by its start
. "$d/env"
cwd=$(cat "$d/cwd")
if [ -n "$cwd" ] && ! cd -- "$cwd"; then
	echo "mu: cannot enter $cwd" >&2
	rc=126
elif [ -f "$d/harness" ]; then
	# A harness adapter (docs/harness.md "Adapters") runs the command.
	/bin/sh "$d/harness" "$d"
	rc=$?
else
	/bin/sh -c "$(cat "$d/cmd")"
	rc=$?
fi
printf '%s\n' "$rc" >"$d/exit.tmp" && mv -f "$d/exit.tmp" "$d/exit"
