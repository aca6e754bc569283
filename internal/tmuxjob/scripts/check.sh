# check: the host's tools and state root, one "step NAME ok|fail detail"
# line each. $1 the watch's look interval (seconds), for its fallback.
every=$1
step() { say "step $1 $2 $3"; }
if command -v tmux >/dev/null 2>&1; then
	v=$(tmux -V 2>&1)
	case $v in
	"tmux "[012].* | "tmux 3."[01]*) step tmux fail "$v: 3.2 or later is needed (new-session -e)" ;;
	*) step tmux ok "$v" ;;
	esac
else
	step tmux fail "tmux is not installed"
fi
missing=
for x in flock base64 mktemp tail head sed awk grep; do
	command -v "$x" >/dev/null 2>&1 || missing="$missing $x"
done
if [ -z "$missing" ]; then
	if printf 'a\0' | grep -qzx a 2>/dev/null; then step tools ok "flock base64 mktemp tail head sed awk grep -z"; else step tools fail "grep has no -z (GNU grep is needed)"; fi
else
	step tools fail "missing:$missing"
fi
if mkdir -p "$root/jobs" 2>/dev/null && [ -w "$root/jobs" ]; then step state-root ok "$root"; else step state-root fail "$root/jobs is not writable"; fi
# agents: the agent CLIs the adapters wire, found on this PATH or not,
# with their versions (docs/harness.md "Adapters").
v=
for x in claude:@anthropic-ai/claude-code codex:@openai/codex; do
	p=${x%%:*}
	if command -v "$p" >/dev/null 2>&1; then
		if command -v timeout >/dev/null 2>&1; then w=$(timeout 20 "$p" --version 2>&1 </dev/null); else w=$("$p" --version 2>&1 </dev/null); fi
		v="$v${v:+; }$p $(oneline "$(printf '%s' "$w" | head -n 1)")"
	else
		v="$v${v:+; }$p not installed (npm install -g ${x#*:})"
	fi
done
step agents ok "$v"
# watch: how a channel.watch waits for a turn (scripts/wait.sh).
if command -v timeout >/dev/null 2>&1 && case $(tail --version 2>/dev/null) in *GNU*) true ;; *) false ;; esac; then
	# GNU tail polls a file it takes for a remote one, inotify or not: FUSE
	# (Docker's fuse-overlayfs root) and network filesystems.
	fs=$(stat -f -c %T "$root" 2>/dev/null)
	case $fs in
	fuse* | nfs* | smb* | cifs | ceph | afs | coda | lustre | gpfs | ocfs2 | vboxsf | vmhgfs | prl_fs)
		step watch ok "a look every 10 ms by GNU tail -F (the state root is on $fs, which GNU tail does not follow by inotify)"
		;;
	*)
		if [ -d /proc/sys/fs/inotify ]; then
			step watch ok "inotify: GNU tail -F wakes on the harness's rename of its state"
		else
			step watch ok "a look every 10 ms by GNU tail -F (no inotify on this host)"
		fi
		;;
	esac
else
	step watch ok "a look every ${every}s (no GNU tail and timeout on this host)"
fi
