#!/usr/bin/env bash
# Runs shellcheck over every shell script in the tree; any finding fails
# (fix it, or disable it on its line with a comment that says why).
#
# The scripts that run on a host (embedded from backend/ and internal/) are
# POSIX sh: checked with -s sh. The project's own tools (scripts/,
# integration/) are checked in their shebang's dialect, following what they
# source (a file there without a shebang is a library: shellcheck reads it
# for what it defines, through the tools that source it). Where the Go code
# joins scripts before it runs them (tmuxjob's lib.sh before each operation,
# docker's kill.sh before its loop and its stop, ssh's wrapper around a
# command), they are checked joined, as they run, and each finding names
# its own file and line. A prelude joined to several scripts is reported
# only for what holds in every one of them: a function or a variable of
# lib.sh that one operation does not use is not a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v shellcheck >/dev/null 2>&1; then
	echo "shellcheck: not installed (scripts/deps.sh installs it)" >&2
	exit 1
fi

findings=$(mktemp)
trap 'rm -f "$findings"' EXIT
declare -A uses # how many checked units each file took part in

# sc ARG…: shellcheck, its findings on stdout; a run that could not check
# (exit 2 or more) says so there too.
sc() {
	local rc=0
	shellcheck "$@" || rc=$?
	[ "$rc" -le 1 ] || echo "shellcheck $*: exit $rc: the script was not checked"
}

# joined FILE…: the files as one POSIX sh script (a blank line between
# them), each finding mapped back to its file and line.
joined() {
	local f spec=()
	for f in "$@"; do
		spec+=("$f" "$(wc -l <"$f")")
		uses[$f]=$((${uses[$f]:-0} + 1))
	done
	for f in "$@"; do cat "$f"; echo; done |
		sc -s sh -f gcc - |
		awk -v spec="${spec[*]}" '
			BEGIN {
				n = split(spec, a, " ")
				for (i = 1; i <= n; i += 2) { k++; name[k] = a[i]; start[k] = off; off += a[i + 1] + 1 }
			}
			/^-:[0-9]+:/ {
				split($0, p, ":"); line = p[2] + 0
				for (j = k; j > 1 && line <= start[j]; j--) continue
				sub(/^-:[0-9]+:/, name[j] ":" (line - start[j]) ":")
			}
			{ print }' >>"$findings"
}

# Joined as the Go code joins them.
tmux=internal/tmuxjob/scripts
for op in "$tmux"/*.sh; do
	case $op in */lib.sh | */wrapper.sh | */turn.sh) continue ;; esac
	# turn.sh: the fragment read and wait take (turn.go's fragments).
	case $op in
	*/read.sh) joined "$tmux/lib.sh" "$tmux/turn.sh" "$op" ;;
	*) joined "$tmux/lib.sh" "$op" ;;
	esac
done
joined internal/execchan/scripts/kill.sh internal/execchan/scripts/agent.sh
joined internal/execchan/scripts/kill.sh internal/execchan/scripts/stop.sh
joined backend/ssh/scripts/arm.sh backend/ssh/scripts/exec.sh backend/ssh/scripts/disarm.sh
# tmuxjob's harness adapters (adapters.go) and the doubles of their CLIs.
ad=internal/tmuxjob/adapters
for a in codex claude-print; do
	joined "$ad/lib.sh" "$ad/$a.sh" "$ad/print.sh"
done
joined "$ad/lib.sh" "$ad/claude.sh"
db=internal/tmuxjob/agent/doubles
joined "$db/lib.sh" "$db/codex.sh"
joined "$db/lib.sh" "$db/claude-tui.sh" "$db/claude.sh"

# Every other script: a host's alone, as POSIX sh; a tool's by its shebang.
while IFS= read -r f; do
	[ -n "${uses[$f]:-}" ] && continue
	uses[$f]=1
	case $f in
	scripts/* | integration/*)
		if head -c 2 "$f" | grep -q '^#!'; then
			sc -x -P SCRIPTDIR -f gcc "$f" >>"$findings"
		fi
		;;
	*) sc -s sh -f gcc "$f" >>"$findings" ;;
	esac
done < <(git ls-files --cached --others --exclude-standard '*.sh')

# Findings let through for now, "FILE CODE" a line, each saying why. Every
# other finding fails.
allowed=''

# A finding stands when it holds in every unit its file took part in.
failed=0
while read -r count finding; do
	f=${finding%%:*}
	code=${finding##*\[}
	code=${code%\]}
	case $allowed in *"
$f $code "*) continue ;; esac
	if [ "$count" -ge "${uses[$f]:-1}" ]; then
		echo "$finding"
		failed=1
	fi
done < <(sort "$findings" | uniq -c)
exit "$failed"
