#!/bin/sh
# A test double of an agent CLI (docs/harness.md "Test doubles"): it
# implements the CLI's published interface that mu's adapter uses, with a
# scripted agent behind it instead of a model. The reply to a prompt is
# "NAME[N]: PROMPT", N the turn's number in its session. Markers in a
# prompt steer it, as they steer mu-test-agent:
#   [[ms:N]]      work N ms (default 200)
#   [[error:E]]   the turn fails with the message E
#   [[write]]     write the prompt to mu-agent.txt in the cwd (refused
#                 under a read-only sandbox or plan mode)
#   [[block:Q]]   (interactive) a permission dialog asking Q
set -u
export LC_ALL=C
now_ms() {
	t=$(date +%s%3N)
	case $t in *N*) t=$(($(date +%s) * 1000)) ;; esac
	echo "$t"
}
uuid() {
	h=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	printf '%s-%s-4%s-a%s-%s\n' "$(echo "$h" | cut -c1-8)" "$(echo "$h" | cut -c9-12)" "$(echo "$h" | cut -c14-16)" "$(echo "$h" | cut -c18-20)" "$(echo "$h" | cut -c21-32)"
}
marker() { sed -n "s/.*\[\[$1:\([$2]*\)\]\].*/\1/p" "$3" | head -n 1; }
work() {
	ms=$(marker ms 0-9 "$1")
	ms=${ms:-200}
	sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
}
# jstr FILE: FILE's bytes as a JSON string literal.
jstr() {
	awk 'BEGIN { RS = "\001"; ORS = "" }
	{ s = (NR > 1 ? s RS : "") $0 }
	END {
		gsub(/\\/, "&&", s); gsub(/"/, "\\\"", s); gsub(/\n/, "\\n", s); gsub(/\r/, "\\r", s); gsub(/\t/, "\\t", s)
		for (k = 1; k < 32; k++) { c = sprintf("%c", k); if (index(s, c)) gsub(c, sprintf("\\u%04x", k), s) }
		print "\"" s "\""
	}' "$1"
}
die() {
	printf '%s\n' "$2" >&2
	exit "$1"
}
# reply NAME PROMPT SESSIONFILE OUT: the scripted turn; OUT gets the final
# text. It fails (status 1, the message in $fail) on [[error:E]].
reply() {
	work "$2"
	[ -f "$3" ] || : >"$3"
	n=$(($(grep -c '^{"turn":' "$3") + 1))
	printf '{"turn":%s}\n' "$n" >>"$3"
	fail=$(marker error 'A-Za-z0-9 _.-' "$2")
	[ -n "$fail" ] && return 1
	if grep -q '\[\[write\]\]' "$2"; then
		if [ "$readonly" = 1 ]; then
			printf '%s[%s]: (the write was refused: read-only) ' "$1" "$n" >"$4"
			cat "$2" >>"$4"
			return 0
		fi
		cat "$2" >>mu-agent.txt
	fi
	printf '%s[%s]: ' "$1" "$n" >"$4"
	cat "$2" >>"$4"
}
