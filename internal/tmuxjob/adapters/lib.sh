#!/bin/sh
# A mu harness adapter (docs/harness.md "Adapters"): it runs in the job's
# terminal (the wrapper runs it as `/bin/sh JOBDIR/harness JOBDIR`) and
# wires an agent CLI to the harness contract. This part holds what every
# adapter shares: the channel's files, the state file, a turn's record.
# The job's own files it reads: cmd (spec.cmd, the CLI's command line, to
# which the adapter appends its arguments) and role (spec.role).
set -u
export LC_ALL=C
D=${1:?usage: harness JOBDIR}
C=${MU_CHANNEL_DIR:?MU_CHANNEL_DIR is not set: run me as a mu job}
IN=$C/inbox ANS=$C/answers OUT=$C/out
# H: the adapter's own files (prompts, replies, the CLI's session id).
H=$D/adapter
mkdir -p "$OUT/turns" "$OUT/tmp" "$H" || exit 1
CMD=$(cat "$D/cmd")
ROLE=$(cat "$D/role" 2>/dev/null)
ROLE=${ROLE:-full-access}
# OWNS_HOME: 1 when the plugin created this host and owns its home (the
# line job.start adds after this part; Options.OwnsHome), else 0.
OWNS_HOME=0

now() {
	t=$(date +%s%3N)
	case $t in *N*) t=$(($(date +%s) * 1000)) ;; esac
	echo "$t"
}
seqof() {
	s=$(echo "${1%%.*}" | sed 's/^0*//')
	echo "${s:-0}"
}
# The entries are listed sorted; their names are sequence numbers mu writes.
# shellcheck disable=SC2012
next_in() { ls "$IN" | awk -F. -v cur="$cursor" '$1+0 > cur+0 {print; exit}'; }
# shellcheck disable=SC2012
next_ans() { ls "$ANS" | awk -F. -v cur="$acursor" '$1+0 > cur+0 {print; exit}'; }
# jget KEY FILE: the top-level JSON string member KEY of FILE, decoded.
# shellcheck disable=SC2154 # json_awk: the JSON reader, set before this part
jget() { awk -v key="$1" "$json_awk" <"$2"; }
# run_cli ARGS…: spec.cmd with ARGS appended (values as arguments).
run_cli() { /bin/sh -c "$CMD"' "$@"' "$CMD" "$@"; }
# prog: the program spec.cmd runs (its first word after NAME=value
# assignments and an exec, env or command; quotes removed).
prog() {
	printf '%s\n' "$CMD" | awk '{ for (i = 1; i <= NF; i++) { w = $i; gsub(/["\047\\]/, "", w)
		if (w == "exec" || w == "env" || w == "command" || w ~ /^[A-Za-z_][A-Za-z0-9_]*=/) continue
		print w; exit } }'
}
# notfound: what to do when the CLI's program is not found (the shell's
# status 127); INSTALL (the adapter's part sets it) says how to install it.
notfound() {
	printf '%s was not found on the host (spec.cmd runs it, on the job'"'"'s PATH): install it (%s), or give its full path in spec.cmd' \
		"$(prog)" "$INSTALL"
}

# The state file: written whole, then renamed, so a reader sees one snapshot.
write_state() {
	printf 'inc=%s\nstate=%s\nsince=%s\nruns=%s\ncursor=%s\nacursor=%s\nmsg=%s\npending=%s\n' \
		"$inc" "$state" "$since" "$runs" "$cursor" "$acursor" "$msg" "$pending" >"$OUT/tmp/state.$$" &&
		mv -f "$OUT/tmp/state.$$" "$OUT/state"
}
# load_state: the state file's values (none: a job that never ran).
load_state() {
	inc='' state=idle since=0 runs=0 cursor=0 acursor=0 msg='' pending=''
	[ -f "$OUT/state" ] || return 0
	while IFS= read -r l; do
		case $l in
		inc=*) inc=${l#inc=} ;;
		state=*) state=${l#state=} ;;
		since=*) since=${l#since=} ;;
		runs=*) runs=${l#runs=} ;;
		cursor=*) cursor=${l#cursor=} ;;
		acursor=*) acursor=${l#acursor=} ;;
		msg=*) msg=${l#msg=} ;;
		pending=*) pending=${l#pending=} ;;
		esac
	done <"$OUT/state"
}
# new_inc: a new incarnation, runs from 0; the cursors go on.
new_inc() {
	load_state
	inc=$(now)-$$-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
	state=idle since=$(now) runs=0 msg='' pending=''
	write_state
}
# take ENTRY: the delivery becomes the turn in progress (one state write).
take() {
	cursor=$(seqof "$1") state=busy since=$(now) msg=$1 pending=''
	write_state
}
# prompt_of ENTRY FILE: the text the CLI gets for the delivery: its text;
# a command's `/NAME` and its instructions.
prompt_of() {
	if [ "$(cat "$IN/$1/kind")" = command ]; then
		{
			printf '/%s' "$(cat "$IN/$1/name")"
			[ -s "$IN/$1/text" ] && printf ' '
			cat "$IN/$1/text"
		} >"$2"
	else
		cat "$IN/$1/text" >"$2"
	fi
}
# settle FILE ERROR: the turn's record first, then the state that counts it.
settle() {
	n=$((runs + 1))
	at=$(now)
	{
		printf 'at=%s\nmsg=%s\nerror=%s\n\n' "$at" "$msg" "$2"
		cat "$1"
	} >"$OUT/tmp/turn.$$" && mv -f "$OUT/tmp/turn.$$" "$OUT/turns/$inc.$n"
	runs=$n state=idle since=$at msg='' pending=''
	write_state
}
oneline() { tr '\n\r' '  ' | cut -c1-400; }
