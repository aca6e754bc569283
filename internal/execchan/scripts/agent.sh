# agent.sh (after kill.sh): the exec channel's loop. Each request is
# "TOKEN MARK LEN [STDINLEN SEP]", the cwd on a line of its own, LEN bytes
# of payload, then STDINLEN bytes of stdin (session.go writes them and
# says what each field means). It runs the payload in cwd (from the login
# directory) with MU_EXEC_RUN=MARK, kills what the run left behind when
# the container's process list changed, and ends the run's stdout with
# "TOKEN CODE" and its stderr with "TOKEN". Each request first creates
# /tmp/.mu-activity, which tells host.sh the host is in use (true, not
# the special builtin ':', so that a /tmp it cannot write ends nothing).
f=
trap '[ -z "$f" ] || rm -f "$f"' EXIT
while IFS=' ' read -r t m n i S; do
	IFS= read -r d
	true 2>/dev/null >/tmp/.mu-activity
	s=$(head -c "$n"; echo x); s=${s%x}
	set -- /proc/[0-9]*; b="$*"
	if [ -z "$i" ]; then
		(cd 2>/dev/null || cd /; cd -- "$d" && MU_EXEC_RUN=$m exec /bin/sh -c "$s") </dev/null
		r=$?
	else
		in=/dev/null
		if [ "$i" -gt 0 ]; then
			[ -n "$f" ] || f=$(mktemp) || f=
			head -c "$i" >"${f:-/dev/null}"; in=${f:-/nonexistent/mu-stdin}
		fi
		set -f; o=$IFS; IFS=$S
		# The payload's fields, split on SEP with globbing off, are the argv.
		# shellcheck disable=SC2086
		set -- $s
		IFS=$o; set +f
		(cd 2>/dev/null || cd /; cd -- "$d" && MU_EXEC_RUN=$m exec "$@") <"$in"
		r=$?
	fi
	set -- /proc/[0-9]*; [ "$*" = "$b" ] || k "$m"
	printf '%s %d\n' "$t" "$r"
	printf '%s\n' "$t" >&2
done
