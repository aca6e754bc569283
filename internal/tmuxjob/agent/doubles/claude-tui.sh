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
# By version ($version; the changelog at
# https://github.com/anthropics/claude-code/blob/main/CHANGELOG.md):
#   - before 2.1.47 the Stop input has no last_assistant_message, and the
#     transcript's assistant entry is written after the Stop hook starts
#     (the lag anthropics/claude-code#15812 and #74340 report; the hooks
#     reference: "hooks can access it without parsing the transcript");
#   - from 2.1.78 a turn that ends on an API error ([[apierror:TYPE]])
#     runs StopFailure (matcher: the error type; input error,
#     error_details, last_assistant_message "API Error: …"; output and
#     exit code ignored), not Stop; before it, no hook runs for it.
# Tools (the permissions page, https://code.claude.com/docs/en/permissions:
# Read asks for "paths outside the working directory and additional
# directories"): a prompt or context naming "the file /PATH" makes the
# scripted agent Read PATH; outside the cwd and the --add-dir directories
# (and unless bypassPermissions) a permission dialog for Read asks first
# (dontAsk: denied); the reply then ends with "[read N bytes]".
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
			else if (c ~ /[-0-9tfn]/) { v = c; while (i < n && substr(s, i + 1, 1) ~ /[-+.0-9a-zA-Z]/) { i++; v = v substr(s, i, 1) } print path() "\t" v }
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
# since V: this double's version is V or later.
since() {
	awk -v a="$version" -v b="$1" 'BEGIN {
		n = split(a, x, "."); m = split(b, y, ".")
		for (i = 1; i <= (n > m ? n : m); i++) { if (x[i] + 0 > y[i] + 0) exit 0; if (x[i] + 0 < y[i] + 0) exit 1 }
		exit 0
	}'
}
# dialog TOOL KEY VALUE: a permission dialog for the tool TOOL whose input
# is {KEY: VALUE}; 0 allowed, 1 denied, 2 interrupted.
dialog() {
	printf '{%s,"tool_name":"%s","tool_input":{"%s":%s}}' "$(base_json PermissionRequest)" "$1" "$2" "$(printf '%s' "$3" | jstr /dev/stdin)" >"$tmp/in"
	run_hooks PermissionRequest "$1" "$tmp/in" "$tmp/out"
	case $(flat "$tmp/out" | sed -n 's/^hookSpecificOutput\.decision\.behavior	//p') in
	allow) return 0 ;;
	deny) return 1 ;;
	esac
	printf 'Claude wants to use %s: %s\n  1. Yes (Enter)  2. Yes, and do not ask again  3. No (esc to interrupt)\n' "$1" "$3"
	printf '{%s,"message":"Claude needs your permission to use %s","notification_type":"permission_prompt"}' "$(base_json Notification)" "$1" >"$tmp/in"
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
	denied='' read=''
	if [ -n "$q" ]; then
		wait_ms $((ms / 2)) || { interrupted; return; }
		dialog Bash command "$q"
		case $? in 1) denied=' (denied)' ;; 2) interrupted && return ;; esac
		ms=$((ms - ms / 2))
	fi
	f=$(sed -n 's/.*the file \(\/[^ ]*\).*/\1/p' "$tmp/body" | head -n 1)
	if [ -n "$f" ]; then
		read_tool "$f"
		case $? in 1) read=' [read denied]' ;; 2) interrupted && return ;; *) read=" [read $(wc -c <"$f") bytes]" ;; esac
	fi
	wait_ms "$ms" || { interrupted; return; }
	e=$(marker apierror 'a-z_' "$tmp/body")
	[ -n "$e" ] && { api_error "$e"; return; }
	printf '[[ms:0]]' >>"$tmp/body"
	reply claude "$tmp/body" "$tr.turns" "$tmp/r"
	sed -i 's/\[\[ms:0\]\]$//' "$tmp/r"
	printf '%s%s' "$denied" "$read" >>"$tmp/r"
	printf '⏺ '
	cat -v "$tmp/r" | head -c 2000
	echo
	entry="[{\"type\":\"text\",\"text\":$(jstr "$tmp/r")}]"
	if since 2.1.47; then
		transcript assistant "$entry"
		printf '{%s,"stop_hook_active":false,"last_assistant_message":%s}' "$(base_json Stop)" "$(jstr "$tmp/r")" >"$tmp/in"
	else
		# The transcript lags: its entry lands after the hook has started.
		(sleep 1 && transcript assistant "$entry") &
		printf '{%s,"stop_hook_active":false}' "$(base_json Stop)" >"$tmp/in"
	fi
	run_hooks Stop '' "$tmp/in" "$tmp/out"
	wait
}
# read_tool PATH: the Read tool on PATH: 0 read, 1 denied, 2 interrupted.
read_tool() {
	case $pmode in bypassPermissions) return 0 ;; dontAsk) within "$1" || return 1 ;; esac
	within "$1" && return 0
	dialog Read file_path "$1"
}
# within PATH: PATH is in the cwd or a --add-dir directory.
within() {
	printf '%s\n%s' "$(pwd)" "$adddirs" | {
		while IFS= read -r d; do
			[ -n "$d" ] && case $1 in "$d"/*) exit 0 ;; esac
		done
		exit 1
	}
}
# api_error TYPE: the turn ends on an API error of TYPE (the hooks
# reference's StopFailure; its error types: rate_limit,
# authentication_failed, billing_error, invalid_request, server_error,
# max_output_tokens, unknown).
api_error() {
	m="API Error: $1 (test double)"
	echo "  ⎿ $m"
	transcript assistant "[{\"type\":\"text\",\"text\":\"$m\"}]"
	since 2.1.78 || return 0
	printf '{%s,"error":"%s","error_details":"%s","last_assistant_message":"%s"}' "$(base_json StopFailure)" "$1" "the double's $1" "$m" >"$tmp/in"
	run_hooks StopFailure "$1" "$tmp/in" "$tmp/out" || :
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
# cfg KEY: the global config's value at the flattened path KEY (a
# duplicate key's last value, as JSON.parse keeps it).
cfg() { awk -F '\t' -v k="$1" '$1 == k { v = $2 } END { print v }' "$tmp/conf"; }
# choose TEXT KEYS: a screen showing TEXT, until one of KEYS (key codes,
# space-separated) is typed; prints that key's code.
choose() {
	printf '%s\n' "$1" >&2
	while :; do
		b=$(key)
		case " $2 " in *" $b "*) [ -n "$b" ] && echo "$b" && return ;; esac
	done
}
# first_run: the screens a fresh home shows before the first session
# (so before any hook), as the tools that run Claude Code in containers
# report them (majorcontext/moat#253, khromov/codebay#89,
# typeclaw/typeclaw#296, anthropics/claude-code#8938), each skipped when
# the global config ($CLAUDE_CONFIG_DIR or ~, .claude.json) holds its
# answer: hasCompletedOnboarding (the theme picker; then, with no API key
# in the environment, the login method, which this double cannot pass);
# customApiKeyResponses.approved holding ANTHROPIC_API_KEY's last 20
# characters ("Detected a custom API key", default No); the project's
# hasTrustDialogAccepted (the folder trust, keyed by the cwd); with
# bypassPermissions, bypassPermissionsModeAccepted (the warning, default
# No, exit). Enter takes a screen's default; the double does not write
# the answers it is given.
first_run() {
	: >"$tmp/conf"
	c=${CLAUDE_CONFIG_DIR:-$HOME}/.claude.json
	[ -f "$c" ] && flat "$c" >"$tmp/conf"
	login='Select login method:  1. Claude account with subscription  2. Anthropic Console account'
	if [ "$(cfg hasCompletedOnboarding)" != true ]; then
		choose 'Choose the text style that looks best with your terminal  1. Dark mode  2. Light mode' '13 49 50' >/dev/null
		[ -n "${ANTHROPIC_API_KEY:-}" ] || { choose "$login" '' >/dev/null; }
	fi
	if [ -n "${ANTHROPIC_API_KEY:-}" ]; then
		k=$(printf '%s' "$ANTHROPIC_API_KEY" | tail -c 20)
		if ! awk -F '\t' -v k="$k" '$1 ~ /^customApiKeyResponses\.approved\./ && $2 == k { f = 1 } END { exit !f }' "$tmp/conf"; then
			case $(choose 'Detected a custom API key in your environment. Do you want to use this API key?  1. Yes  2. No (recommended)' '13 49 50') in
			49) ;;
			*) choose "$login" '' >/dev/null ;;
			esac
		fi
	fi
	if [ "$(cfg "projects.$(pwd -P).hasTrustDialogAccepted")" != true ]; then
		case $(choose 'Do you trust the files in this folder?  1. Yes, proceed  2. No, exit' '13 49 50 27') in
		50 | 27) exit 1 ;;
		esac
	fi
	if [ "$pmode" = bypassPermissions ] && [ "$(cfg bypassPermissionsModeAccepted)" != true ]; then
		case $(choose 'WARNING: Claude Code running in Bypass Permissions mode  1. No, exit  2. Yes, I accept' '13 49 50') in
		50) ;;
		*) exit 1 ;;
		esac
	fi
}
interactive() {
	: >"$tmp/hooks"
	[ -n "$settings" ] && { flat "$settings" >"$tmp/hooks" || die 1 "invalid settings file $settings"; }
	stty -icanon -echo -isig -icrnl min 0 time 1 2>/dev/null
	first_run
	new_session
	start_session startup
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
