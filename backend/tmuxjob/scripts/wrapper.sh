# mu job wrapper (tmuxjob): runs the job's command, records its exit code.
d=$1
while [ ! -e "$d/go" ]; do sleep 0.02; done
printf '%s\n' "$$" >"$d/pid"
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
