# claude.sh: Claude Code, interactive (docs/harness.md "Claude Code,
# interactive"): the CLI's own TUI runs in the pane, started with
#   CMD --add-dir JOBDIR/adapter/messages --settings JOBDIR/adapter/settings.json [--permission-mode plan]
# and its hooks (that settings file, per invocation: nothing is written in
# the user's repository or ~/.claude) follow the contract. They run this
# program as `harness JOBDIR hook EVENT` with the hook's JSON on stdin.
# A background keeper types what the hooks ask for into the pane (a slash
# command, /clear, a nudge, an answer's keys) and notices an interrupt.
INLINE=8000
INSTALL='npm install -g @anthropic-ai/claude-code'
PANE=${TMUX_PANE:-}
# locked: the adapter's processes (hooks, keeper) change the state one at a time.
lock() {
	exec 8>>"$H/lock" && flock -w 20 8
}
unlock() { exec 8>&-; }
keys() { [ -n "$PANE" ] && tmux send-keys -t "$PANE" "$@"; }
type_line() { keys -l "$1" && keys Enter; }
kind_of() { cat "$IN/$1/kind" 2>/dev/null; }

# context ENTRY: the delivery's text as the prompt's added context (the
# hook's stdout); a text over INLINE bytes goes as a file the agent is
# pointed to, in $MSGS: an additional working directory of the CLI
# (--add-dir), so its Read tool asks no permission for it.
MSGS=$H/messages
context() {
	n=$(wc -c <"$IN/$1/text")
	if [ "$n" -le "$INLINE" ]; then
		printf 'mu delivered this message; reply to it as the prompt:\n\n'
		cat "$IN/$1/text"
	else
		f=$MSGS/message.$(seqof "$1").txt
		cp "$IN/$1/text" "$f"
		printf 'mu delivered a message of %s bytes, too long to show here: read it whole from the file %s and reply to it as the prompt.\n' \
			"$n" "$f"
	fi
}
# mark: the transcript's size as a turn begins: the keeper looks past it
# for an interrupt.
mark() {
	t=$(cat "$H/transcript" 2>/dev/null)
	if [ -f "$t" ]; then wc -c <"$t" >"$H/tpos"; else echo 0 >"$H/tpos"; fi
}
block_prompt() { printf '{"decision":"block","reason":"%s"}\n' "$1"; }

hook_SessionStart() {
	jget session_id "$1" >"$H/session"
	jget transcript_path "$1" >"$H/transcript"
	src=$(jget source "$1")
	lock
	if [ -f "$H/started" ] && [ -f "$H/preinc" ]; then
		# The CLI's first session, after a first-run screen: the
		# incarnation the keeper wrote for it goes on.
		rm -f "$H/started" "$H/preinc" "$H/screen" "$H/answered"
		load_state
		state=idle pending='' since=$(now)
		write_state
		unlock
		return 0
	fi
	rm -f "$H/started" "$H/screen" "$H/answered"
	case $src in
	clear | compact)
		load_state
		if [ "$state" != idle ] && [ -n "$msg" ]; then
			if [ "$(kind_of "$msg")" = fresh ] && [ "$src" = clear ]; then
				# The context is clear: now the fresh delivery's text.
				printf '%s\n' "$msg" >"$H/then"
			elif [ "$(kind_of "$msg")" = command ]; then
				# A built-in command (/clear, /compact) ends with no response.
				: >"$H/reply"
				settle "$H/reply" ''
			fi
		fi
		;;
	*) new_inc ;;
	esac
	unlock
}

hook_UserPromptSubmit() {
	p=$(jget prompt "$1")
	lock
	load_state
	case $p in /*)
		unlock
		return 0
		;;
	esac
	if [ -f "$H/then" ]; then
		e=$(cat "$H/then")
		rm -f "$H/then"
		mark
		context "$e"
		unlock
		return 0
	fi
	if [ "$state" != idle ] && [ -f "$H/type" ]; then
		# A second nudge (the plugin's and the keeper's) while the keeper
		# has yet to type the taken delivery's command: not a turn.
		block_prompt "mu: a delivery is in progress"
		unlock
		return 0
	fi
	if [ "$state" != idle ]; then
		# A turn that ended with no Stop: it was interrupted.
		: >"$H/reply"
		settle "$H/reply" interrupted
	fi
	e=$(next_in)
	if [ -z "$e" ]; then
		block_prompt "mu: no delivery is waiting (this pane takes its prompts from mu's deliveries)"
		unlock
		return 0
	fi
	take "$e"
	mark
	case $(kind_of "$e") in
	fresh)
		printf '/clear\n' >"$H/type"
		block_prompt "mu: a fresh context first"
		;;
	command)
		prompt_of "$e" "$H/cmdline"
		tr '\n' ' ' <"$H/cmdline" >"$H/type"
		block_prompt "mu: the command follows"
		;;
	*) context "$e" ;;
	esac
	unlock
}

# hook_blocked: a permission dialog is shown (PermissionRequest, or the
# permission_prompt Notification): the turn waits for an answer.
hook_blocked() {
	q=$(jget message "$1")
	[ -n "$q" ] || q="permission to use $(jget tool_name "$1")"
	lock
	load_state
	if [ "$state" = busy ]; then
		state=blocked pending=$(printf '%s' "$q" | oneline) since=$(now)
		write_state
	fi
	unlock
}

hook_Stop() {
	err=''
	if ! jget last_assistant_message "$1" >"$H/reply.$$"; then
		transcript_reply "$1" "$H/reply.$$" ||
			err='Claude Code wrote no reply for this turn in its transcript (a version before 2.1.47 whose Stop hook has no last_assistant_message)'
	fi
	lock
	load_state
	[ "$state" != idle ] && settle "$H/reply.$$" "$err"
	unlock
	rm -f "$H/reply.$$"
}
# transcript_reply INPUT OUT: (Claude Code before 2.1.47: no
# last_assistant_message) the turn's reply from the transcript: its last
# conversation entry past where this turn began, once it is an assistant
# text (the transcript may lag the Stop hook: wait for it, at most
# TLAG_S seconds, never taking an earlier turn's entry). 1: none came.
TLAG_S=${MU_ADAPTER_TLAG_S:-10}
transcript_reply() {
	t=$(jget transcript_path "$1")
	pos=0
	[ "$(cat "$H/transcript" 2>/dev/null)" = "$t" ] && pos=$(cat "$H/tpos" 2>/dev/null)
	i=$((TLAG_S * 10))
	while :; do
		tail -c +$((${pos:-0} + 1)) "$t" 2>/dev/null | grep -E '"type":"(user|assistant)"' | tail -n 1 >"$H/last.$$"
		if grep '"type":"assistant"' "$H/last.$$" | grep -q '"type":"text"'; then
			awk -v key=text -v deep=1 "$json_awk" <"$H/last.$$" >"$2"
			rm -f "$H/last.$$"
			return 0
		fi
		i=$((i - 1))
		[ "$i" -gt 0 ] || break
		sleep 0.1
	done
	rm -f "$H/last.$$"
	: >"$2"
	return 1
}

# hook_StopFailure: (Claude Code 2.1.78 or later) the turn ended on an
# API error, with no Stop: it settles with the error's type and message.
hook_StopFailure() {
	m=$(jget last_assistant_message "$1")
	d=$(jget error_details "$1")
	e=$(printf 'api error %s: %s%s' "$(jget error "$1")" "${m:-the turn ended on an API error}" "${d:+ ($d)}" | oneline)
	: >"$H/reply.$$"
	lock
	load_state
	[ "$state" != idle ] && settle "$H/reply.$$" "$e"
	unlock
	rm -f "$H/reply.$$"
}

# keep: every 0.2 s, type what a hook asked for, apply an answer, nudge
# for a delivery waiting while idle, settle a turn the transcript says
# was interrupted; before the CLI's first session, say which first-run
# screen is showing.
keep() {
	last=0 seen='' first=0 look=0
	while sleep 0.2; do
		if [ -f "$H/started" ]; then
			look=$((look + 1))
			[ $((look % 5)) = 1 ] && screen
			screen_answer
			continue
		fi
		if [ -f "$H/type" ]; then
			sleep 0.3
			type_line "$(cat "$H/type")"
			rm -f "$H/type"
			continue
		fi
		if [ -f "$H/then" ] && [ ! -f "$H/then.typed" ]; then
			: >"$H/then.typed"
			type_line mu:inbox
			continue
		fi
		rm -f "$H/then.typed"
		lock
		load_state
		a=$(next_ans)
		if [ -n "$a" ]; then
			acursor=$(seqof "$a")
			if [ "$state" = blocked ]; then
				state=busy pending='' since=$(now)
				write_state
				while IFS= read -r k; do [ -n "$k" ] && keys "$k"; done <"$ANS/$a/text"
			else
				write_state
			fi
		elif [ "$state" = busy ] && interrupted; then
			: >"$H/reply"
			settle "$H/reply" interrupted
		elif [ "$state" = idle ] && e=$(next_in) && [ -n "$e" ]; then
			# A delivery waiting while idle for a second (the plugin does
			# not nudge during a turn): nudge, again every 3 s.
			now_s=$(date +%s)
			if [ "$e" != "$seen" ]; then
				seen=$e first=$now_s last=0
			elif [ $((now_s - first)) -ge 1 ] && [ $((now_s - last)) -ge 3 ]; then
				last=$now_s
				type_line mu:inbox
			fi
		fi
		unlock
	done
}
# interrupted: the transcript, past where the turn began, says the user
# interrupted it (Claude Code runs no Stop hook then).
interrupted() {
	t=$(cat "$H/transcript" 2>/dev/null)
	[ -f "$t" ] || return 1
	pos=$(cat "$H/tpos" 2>/dev/null)
	tail -c +$((${pos:-0} + 1)) "$t" | grep -q 'Request interrupted by user'
}

# ended RC: the CLI exited with RC. A turn in progress settles with that
# (no hook runs for it); a CLI that never started a session leaves why in
# out/failed (readStates' reason): not found (127), or its exit status.
ended() {
	lock
	load_state
	if [ -f "$H/started" ]; then
		if [ "$1" -eq 127 ]; then notfound; else printf 'claude exited %s before its first session started (see the job'"'"'s terminal)' "$1"; fi |
			oneline >"$OUT/tmp/failed.$$" && mv -f "$OUT/tmp/failed.$$" "$OUT/failed"
		echo "mu adapter (claude): $(cat "$OUT/failed")"
	elif [ "$state" != idle ]; then
		: >"$H/reply"
		settle "$H/reply" "claude exited $1"
	fi
	unlock
}

# screen: (before the CLI's first session, which no hook precedes) the
# first-run screen the pane shows, by its words, as the state: blocked,
# pending naming it and the remedy; an answer (channel.answer's keys, as
# a person would type them) is typed into it.
screen() {
	[ -n "$PANE" ] || return 0
	# The lowest screen on the pane is the one showing; a pane unchanged
	# since an answer was typed shows no screen to ask about yet.
	cap=$(tmux capture-pane -p -J -t "$PANE" 2>/dev/null)
	[ -f "$H/answered" ] && [ "$cap" = "$(cat "$H/answered")" ] && return 0
	p=$(printf '%s\n' "$cap" | awk '
		/Choose the text style/ { s = "theme" }
		/Detected a custom API key/ { s = "key" }
		/Select login method/ { s = "login" }
		/Do you trust the files in this folder|Is this a project you created or one you trust/ { s = "trust" }
		/Bypass Permissions mode/ { s = "bypass" }
		END { print s }')
	case $p in
	theme) s='the theme picker ("Choose the text style")' ;;
	key) s='the API key approval ("Detected a custom API key"; 1 uses it)' ;;
	login) s='the login method ("Select login method")' ;;
	trust) s='the folder trust ("Do you trust the files in this folder?")' ;;
	bypass) s='the bypass-mode warning ("Bypass Permissions mode"; 2 accepts)' ;;
	*) s='' ;;
	esac
	lock
	load_state
	if [ ! -f "$H/started" ]; then
		: # the first session began meanwhile
	elif [ -n "$s" ]; then
		m="Claude Code's first-run screen: $s: answer it in the job's pane, or with channel.answer keys; or run claude once by hand in this home and folder (docs/harness.md \"First-run screens\")"
		if [ ! -f "$H/preinc" ]; then
			# The incarnation begins here: its first session keeps it.
			new_inc
			: >"$H/preinc"
		fi
		if [ "$state" != blocked ] || [ "$pending" != "$m" ]; then
			state=blocked pending=$m since=$(now)
			: >"$H/screen"
			write_state
		fi
	elif [ -f "$H/screen" ]; then
		state=busy pending='' since=$(now)
		rm -f "$H/screen"
		write_state
	fi
	unlock
}

# screen_answer: an answer while a first-run screen shows: its keys are
# typed into it (no turn waits on it: the state is busy, the CLI
# starting, until the keeper sees the next screen or the session starts).
screen_answer() {
	lock
	load_state
	a=$(next_ans)
	if [ -n "$a" ] && [ -f "$H/started" ]; then
		acursor=$(seqof "$a")
		if [ "$state" = blocked ]; then
			# busy (Claude Code is starting), not idle: the plugin does not
			# type its nudge into a screen then.
			state=busy pending='' since=$(now)
			rm -f "$H/screen"
			write_state
			tmux capture-pane -p -J -t "$PANE" >"$H/answered" 2>/dev/null
			while IFS= read -r k; do [ -n "$k" ] && keys "$k"; done <"$ANS/$a/text"
		else
			write_state
		fi
	fi
	unlock
}

# onboard: on a host the plugin owns (OWNS_HOME=1), Claude Code's first-run
# screens answered in its global config file (onboard.awk), for this
# folder and the job's API key; never on a user's own machine.
onboard() {
	[ "$OWNS_HOME" = 1 ] || return 0
	f=${CLAUDE_CONFIG_DIR:-$HOME}/.claude.json
	js() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
	k=''
	[ -n "${ANTHROPIC_API_KEY:-}" ] && k=$(js "$(printf '%s' "$ANTHROPIC_API_KEY" | tail -c 20)")
	src=$f
	[ -f "$f" ] || src=/dev/null
	# shellcheck disable=SC2154 # onboard_awk: onboard.awk, set before this part
	if ! (umask 077 && ONBOARD_CWD=$(js "$(pwd -P)") ONBOARD_KEY=$k awk "$onboard_awk" <"$src" >"$f.mu.$$" && mv -f "$f.mu.$$" "$f"); then
		rm -f "$f.mu.$$"
		echo "mu adapter (claude): could not pre-answer Claude Code's first-run screens in $f" >&2
	fi
}

settings() {
	q=$(printf '%s' "$D" | sed "s/'/'\\\\''/g")
	c=$(printf "/bin/sh '%s/harness' '%s' hook" "$q" "$q" | sed 's/\\/\\\\/g; s/"/\\"/g')
	h() { printf '{"hooks":[{"type":"command","command":"%s %s","timeout":60}]}' "$c" "$1"; }
	m() { printf '{"matcher":"%s","hooks":[{"type":"command","command":"%s %s","timeout":60}]}' "$2" "$c" "$1"; }
	printf '{"hooks":{"SessionStart":[%s],"UserPromptSubmit":[%s],"Stop":[%s],"StopFailure":[%s],"PermissionRequest":[%s],"Notification":[%s]}}\n' \
		"$(h SessionStart)" "$(h UserPromptSubmit)" "$(h Stop)" "$(h StopFailure)" "$(m PermissionRequest '*')" "$(m Notification permission_prompt)"
}

if [ "${2:-}" = hook ]; then
	in=$H/hook.$$
	cat >"$in"
	case ${3:-} in
	SessionStart) hook_SessionStart "$in" ;;
	UserPromptSubmit) hook_UserPromptSubmit "$in" ;;
	Stop) hook_Stop "$in" ;;
	StopFailure) hook_StopFailure "$in" ;;
	PermissionRequest | Notification) hook_blocked "$in" ;;
	esac
	rm -f "$in"
	exit 0
fi
settings >"$H/settings.json" || exit 1
mkdir -p "$MSGS" || exit 1
# The plugin does not nudge while a turn is in progress (scripts/deliver.sh):
# the keeper nudges when the turn has ended.
: >"$D/quiet"
rm -f "$H/type" "$H/then" "$H/then.typed" "$H/session" "$H/screen" "$H/answered" "$H/preinc" "$OUT/failed"
onboard
# Until the CLI's first session (its SessionStart, which writes the
# incarnation) the keeper says which first-run screen, if any, shows.
: >"$H/started"
keep &
keeper=$!
set -- --add-dir "$MSGS" --settings "$H/settings.json"
[ "$ROLE" = read-only ] && set -- "$@" --permission-mode plan
run_cli "$@"
rc=$?
kill "$keeper" 2>/dev/null
ended "$rc"
exit "$rc"
