#!/bin/sh
# ticking.sh LABEL NOTE CMD [ARG...]: runs CMD and, while it runs, prints
# "LABEL: NOTE, N s so far" every MU_TICK seconds (default 30), so a long
# first-run step (a go build of Kubernetes, an mmdebstrap) is never a
# silent terminal. Exits with CMD's status.
set -u
label=$1 note=$2
shift 2
"$@" &
pid=$!
start=$(date +%s)
(
	while sleep "${MU_TICK:-30}" >/dev/null 2>&1; do # sleep holds no pipe open
		kill -0 "$pid" 2>/dev/null || exit 0
		echo "$label: $note, $(($(date +%s) - start)) s so far"
	done
) &
ticker=$!
rc=0
wait "$pid" || rc=$?
kill "$ticker" 2>/dev/null
wait "$ticker" 2>/dev/null
exit "$rc"
