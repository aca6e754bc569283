# claude-tui.sh: the interactive part of the claude double: a TUI in the
# terminal (raw keys: Enter submits, Escape or C-c cancels the input or
# the response in progress, C-d on an empty line exits; keys typed during
# a response are kept for after it), /clear and /compact, and the hooks of
# the --settings file: SessionStart (source startup|clear|compact),
# UserPromptSubmit (exit 2 or {"decision":"block"} blocks the prompt; any
# other stdout is context added to it), PermissionRequest (matcher: the
# tool's name; hookSpecificOutput.decision.behavior allow|deny decides
# the dialog) and Notification (matcher: permission_prompt) when a
# permission dialog is shown, Stop (last_assistant_message) when a
# response ends; none runs for an interrupted response, which the
# transcript records as "[Request interrupted by user]".
# The settings file's hooks, flattened: "PATH<TAB>VALUE" a line.
flat() {
	awk 'BEGIN { RS = "\001" }
	{ s = (NR > 1 ? s RS : "") $0 }
	function path(   p, j) { p = ""; for (j = 1; j <= d; j++) p = p (j > 1 ? "." : "") (t[j] == "{" ? k[j] : x[j]); return p }
	function rd(   r, c, e) {
		i++; r = ""
		while (i <= n) {
			c = substr(s, i, 1)
			if (c == "\\") { e = substr(s, i + 1, 1); r = r (e == "n" ? " " : e == "t" ? " " : e); i += 2; continue }
			if (c == "\"") { i++; return r }
			r = r c; i++
		}
		return r
	}
	END {
		n = length(s); i = 1; d = 0
		while (i <= n) {
			c = substr(s, i, 1)
			if (c == "\"") { v = rd(); if (d > 0 && t[d] == "{" && w[d]) { k[d] = v; w[d] = 0 } else print path() "\t" v; continue }
			if (c == "{" || c == "[") { d++; t[d] = c; w[d] = (c == "{"); x[d] = 0; k[d] = "" }
			else if (c == "}" || c == "]") d--
			else if (c == ",") { if (t[d] == "{") w[d] = 1; else x[d]++ }
			i++
		}
	}' "$1"
}
# commands EVENT VALUE: the hook commands of EVENT whose matcher matches
# VALUE (a matcher absent, empty or "*" matches all; else alternatives
# with |).
commands() {
	grep "^hooks\.$1\.[0-9]*\." "$tmp/hooks" | cut -d. -f3 | sort -un | while read -r g; do
		m=$(sed -n "s/^hooks\.$1\.$g\.matcher	//p" "$tmp/hooks")
		case $m in '' | '*') ;; *) printf '|%s|' "$m" | grep -qF "|$2|" || continue ;; esac
		sed -n "s/^hooks\.$1\.$g\.hooks\.[0-9]*\.command	//p" "$tmp/hooks"
	done
}
# run_hooks EVENT VALUE JSON OUT: each matching command with the JSON on
# stdin, in the cwd, their stdouts to OUT; status 2 when one exited 2.
run_hooks() {
	: >"$4"
	st=0
	commands "$1" "$2" >"$tmp/cmds"
	while IFS= read -r c; do
		CLAUDE_PROJECT_DIR=$(pwd) /bin/sh -c "$c" <"$3" >>"$4" 2>"$tmp/herr"
		[ $? -eq 2 ] && st=2
	done <"$tmp/cmds"
	return "$st"
}
base_json() {
	printf '"session_id":"%s","transcript_path":%s,"cwd":%s,"permission_mode":"%s","hook_event_name":"%s"' \
		"$sid" "$(printf '%s' "$tr" | jstr /dev/stdin)" "$(pwd | tr -d '\n' | jstr /dev/stdin)" "$pmode" "$1"
}
start_session() {
	printf '{%s,"source":"%s","model":"test-double"}' "$(base_json SessionStart)" "$1" >"$tmp/in"
	run_hooks SessionStart "$1" "$tmp/in" "$tmp/out"
}
new_session() {
	sid=$(uuid)
	tr=$proj/$sid.jsonl
	: >"$tr"
}
key() { dd bs=1 count=1 2>/dev/null | od -An -tu1 | tr -d ' \n'; }
chr() { printf '%b' "\\0$(printf '%o' "$1")"; }
# wait_ms MS: work MS ms, keeping typed keys for later; fails on Escape or C-c.
wait_ms() {
	w=$(($1 / 100))
	while [ "$w" -gt 0 ]; do
		b=$(key)
		case $b in 27 | 3) return 1 ;; '') ;; *) ahead="$ahead $b" ;; esac
		w=$((w - 1))
	done
}
# dialog Q: a permission dialog for the Bash command Q; 0 allowed, 1
# denied, 2 interrupted.
dialog() {
	printf '{%s,"tool_name":"Bash","tool_input":{"command":%s}}' "$(base_json PermissionRequest)" "$(printf '%s' "$1" | jstr /dev/stdin)" >"$tmp/in"
	run_hooks PermissionRequest Bash "$tmp/in" "$tmp/out"
	case $(flat "$tmp/out" | sed -n 's/^hookSpecificOutput\.decision\.behavior	//p') in
	allow) return 0 ;;
	deny) return 1 ;;
	esac
	printf 'Claude wants to run: %s\n  1. Yes (Enter)  2. Yes, and do not ask again  3. No (esc to interrupt)\n' "$1"
	printf '{%s,"message":"Claude needs your permission to use Bash","notification_type":"permission_prompt"}' "$(base_json Notification)" >"$tmp/in"
	run_hooks Notification permission_prompt "$tmp/in" "$tmp/out"
	while :; do
		case $(key) in
		49 | 50 | 13) return 0 ;;
		51) return 1 ;;
		27 | 3) return 2 ;;
		esac
	done
}
transcript() { printf '{"type":"%s","sessionId":"%s","message":{"role":"%s","content":%s}}\n' "$1" "$sid" "$1" "$2" >>"$tr"; }
interrupted() {
	transcript user '[{"type":"text","text":"[Request interrupted by user]"}]'
	echo "  ⎿ Interrupted by user"
}
# respond PROMPT CONTEXT: one response; the body is the context when a hook
# added one, else the prompt.
respond() {
	transcript user "$(jstr "$1")"
	if [ -s "$2" ]; then cp "$2" "$tmp/body"; else cp "$1" "$tmp/body"; fi
	ms=$(marker ms 0-9 "$tmp/body")
	ms=${ms:-200}
	q=$(marker block 'A-Za-z0-9_.-' "$tmp/body")
	denied=''
	if [ -n "$q" ]; then
		wait_ms $((ms / 2)) || { interrupted; return; }
		dialog "$q"
		case $? in 1) denied=' (denied)' ;; 2) interrupted && return ;; esac
		ms=$((ms - ms / 2))
	fi
	wait_ms "$ms" || { interrupted; return; }
	printf '[[ms:0]]' >>"$tmp/body"
	reply claude "$tmp/body" "$tr.turns" "$tmp/r"
	sed -i 's/\[\[ms:0\]\]$//' "$tmp/r"
	printf '%s' "$denied" >>"$tmp/r"
	transcript assistant "[{\"type\":\"text\",\"text\":$(jstr "$tmp/r")}]"
	printf '⏺ '
	cat -v "$tmp/r" | head -c 2000
	echo
	printf '{%s,"stop_hook_active":false,"last_assistant_message":%s}' "$(base_json Stop)" "$(jstr "$tmp/r")" >"$tmp/in"
	run_hooks Stop '' "$tmp/in" "$tmp/out"
}
submit() {
	case $1 in
	/clear) new_session && start_session clear && echo "(no content)" && return ;;
	/compact | /compact\ *) start_session compact && echo "Compacted" && return ;;
	/exit | /quit) exit 0 ;;
	esac
	printf '%s' "$1" >"$tmp/p"
	printf '{%s,"prompt":%s}' "$(base_json UserPromptSubmit)" "$(jstr "$tmp/p")" >"$tmp/in"
	if ! run_hooks UserPromptSubmit '' "$tmp/in" "$tmp/ctx"; then
		echo "  ⎿ UserPromptSubmit operation blocked by hook: $(cat "$tmp/herr")"
		return
	fi
	if head -c 1 "$tmp/ctx" | grep -q '{'; then
		f=$(flat "$tmp/ctx")
		if printf '%s\n' "$f" | grep -q '^decision	block$'; then
			echo "  ⎿ UserPromptSubmit operation blocked by hook: $(printf '%s\n' "$f" | sed -n 's/^reason	//p')"
			return
		fi
		printf '%s\n' "$f" | sed -n 's/^hookSpecificOutput\.additionalContext	//p' >"$tmp/ctx"
	fi
	respond "$tmp/p" "$tmp/ctx"
}
interactive() {
	: >"$tmp/hooks"
	[ -n "$settings" ] && { flat "$settings" >"$tmp/hooks" || die 1 "invalid settings file $settings"; }
	new_session
	start_session startup
	stty -icanon -echo -isig -icrnl min 0 time 1 2>/dev/null
	printf 'claude (test double), session %s\n> ' "$sid"
	line='' ahead=''
	while :; do
		if [ -n "$ahead" ]; then
			b=${ahead# }
			b=${b%% *}
			ahead=${ahead# }
			ahead=${ahead#"$b"}
		else
			b=$(key)
		fi
		case $b in
		'') ;;
		13 | 10)
			echo
			[ -n "$line" ] && submit "$line"
			line=''
			printf '> '
			;;
		4) [ -z "$line" ] && exit 0 ;;
		3 | 27) line='' && printf '\n> ' ;;
		127 | 8) line=${line%?} ;;
		*)
			c=$(chr "$b")
			line="$line$c"
			printf '%s' "$c"
			;;
		esac
	done
}
