package tmuxjob_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// The interactive Claude Code adapter's framing of a delivery's text, as
// the prompt's added context.
const claudeFrame = "mu delivered this message; reply to it as the prompt:\n\n"

var claudeTUI = printCase{"", "claude", "claude"}

func claudeReply(n int, text string) string {
	return "claude[" + strconv.Itoa(n) + "]: " + claudeFrame + text
}

// Deliveries of any bytes reach the TUI exactly once, in order, as its
// prompts' context, never typed; a text over the inline limit as a file
// the agent is pointed to, byte for byte.
func TestClaudeTUIDelivers(t *testing.T) {
	a := newAdapterHost(t)
	key := "ct"
	jt := a.start(t, claudeTUI, key, "full-access")
	texts := []string{`quotes ' " \ and $(touch pwned) ` + "`id`", "lines\none\n\ntwo\n"}
	for i, text := range texts {
		a.send(t, key, "m"+strconv.Itoa(i), text)
	}
	for i, text := range texts {
		if o := a.settled(t, jt, int64(i)); o.LastText != claudeReply(i+1, text) || o.LastError != "" {
			t.Fatalf("turn %d: %q (error %q), want %q", i+1, o.LastText, o.LastError, claudeReply(i+1, text))
		}
	}
	big := strings.Repeat("0123456789abcdef", 200<<10/16) + "\n[end]"
	a.send(t, key, "mbig", big)
	o := a.settledUnblocked(t, key, jt, 2)
	_, rest, ok := strings.Cut(o.LastText, "read it whole from the file ")
	path, _, _ := strings.Cut(rest, " and reply")
	if b, err := os.ReadFile(path); !ok || err != nil || string(b) != big || !strings.HasSuffix(o.LastText, " [read "+strconv.Itoa(len(big))+" bytes]") {
		t.Fatalf("the long delivery: %.200q … %q (%v)", o.LastText, o.LastText[max(0, len(o.LastText)-100):], err)
	}
	if r := a.send(t, key, "m0", texts[0]); r.Baseline == nil || *r.Baseline != 0 {
		t.Fatalf("the resend: %+v", r)
	}
	a.send(t, key, "mlast", "last")
	if o := a.settled(t, jt, 3); o.LastText != claudeReply(4, "last") {
		t.Fatalf("after the resend: %q", o.LastText)
	}
	if _, err := os.Stat(a.cwd + "/pwned"); err == nil {
		t.Fatal("a delivery's $(…) ran")
	}
}

// A long delivery is read from its file with no permission dialog in
// every role: the Read tool asks for a path outside the working
// directories (the double, as Claude Code's permissions page says), and
// the adapter's messages folder is one of them (--add-dir), in plan mode
// (read-only) too.
func TestClaudeTUILongMessageEveryRole(t *testing.T) {
	a := newAdapterHost(t)
	big := strings.Repeat("x", 9000)
	for _, role := range []string{"read-only", "full-access"} {
		key := "cl-" + role
		jt := a.start(t, claudeTUI, key, role)
		a.send(t, key, "m1", big)
		o := a.settledUnblocked(t, key, jt, 0)
		if !strings.HasSuffix(o.LastText, " [read 9000 bytes]") || o.LastError != "" {
			t.Fatalf("%s: %q (error %q)", role, o.LastText[max(0, len(o.LastText)-100):], o.LastError)
		}
	}
}

// settledUnblocked is the observation of the turn after `after` settled
// turns; the test fails at once if the turn waits on a dialog instead.
func (a *adapterHost) settledUnblocked(t *testing.T, key string, jt protocol.Target, after int64) protocol.Observation {
	t.Helper()
	var r protocol.Reading
	waitfor.Eventually(t, "the turn settles", func() bool {
		r = a.reading(t, key)
		return r.State == protocol.TurnBlocked || r.Runs > after
	})
	if r.State == protocol.TurnBlocked {
		t.Fatalf("the turn is blocked on %q", r.Pending)
	}
	return a.settled(t, jt, after)
}

// A permission dialog reads blocked with what it asks; an answer's keys
// reach the dialog.
func TestClaudeTUIBlockedAnswer(t *testing.T) {
	a := newAdapterHost(t)
	key := "cb"
	jt := a.start(t, claudeTUI, key, "full-access")
	for i, k := range []struct{ keys, want string }{{"1", ""}, {"3", " (denied)"}} {
		a.send(t, key, "m"+k.keys, "[[block:rm-it]]")
		var r protocol.Reading
		waitfor.Eventually(t, "blocked", func() bool { r = a.reading(t, key); return r.State == protocol.TurnBlocked })
		if !strings.Contains(r.Pending, "Bash") {
			t.Fatalf("pending %q", r.Pending)
		}
		drive.Call(t, a.p, protocol.MethodChannelAnswer, protocol.AnswerParams{Base: base(key), Keys: []string{k.keys}})
		if o := a.settled(t, jt, int64(i)); o.LastText != claudeReply(i+1, "[[block:rm-it]]")+k.want {
			t.Fatalf("answered %s: %q", k.keys, o.LastText)
		}
	}
}

// An interrupt cuts the response (Claude Code runs no Stop hook then: the
// turn settles interrupted) and its text makes the next turn; fresh clears
// the context (/clear: a new session) in place; a command is typed as a
// slash command.
func TestClaudeTUIInterruptFreshCommand(t *testing.T) {
	a := newAdapterHost(t)
	key := "ci"
	jt := a.start(t, claudeTUI, key, "full-access")
	if cut, next := a.interrupt(t, key, jt, 0, "after"); cut.LastError != "interrupted" || next.LastText != claudeReply(1, "after") {
		t.Fatalf("the cut turn %+v, the interrupt's %+v", cut, next)
	}
	inc := a.reading(t, key).Incarnation
	a.fresh(t, key, "m3", "anew")
	if o := a.settled(t, jt, 2); o.LastText != claudeReply(1, "anew") || o.Incarnation != inc {
		t.Fatalf("fresh: %+v (incarnation was %s)", o, inc)
	}
	a.send(t, key, "m4", "again")
	if o := a.settled(t, jt, 3); o.LastText != claudeReply(2, "again") {
		t.Fatalf("after fresh: %q", o.LastText)
	}
	a.command(t, key, "review", "the\nplan")
	if o := a.settled(t, jt, 4); o.LastText != "claude[3]: /review the plan" {
		t.Fatalf("a custom command: %q", o.LastText)
	}
	a.command(t, key, "compact", "")
	if o := a.settled(t, jt, 5); o.LastText != "" || o.LastError != "" {
		t.Fatalf("a built-in command: %+v", o)
	}
}

// A turn that ends on an API error (Claude Code 2.1.78 and later run
// StopFailure, not Stop) settles with the error's type and message; the
// next delivery makes a turn as usual.
func TestClaudeTUIStopFailure(t *testing.T) {
	a := newAdapterHost(t)
	key := "csf"
	jt := a.start(t, claudeTUI, key, "full-access")
	a.send(t, key, "m1", "[[apierror:rate_limit]]")
	if o := a.settledUnblocked(t, key, jt, 0); o.LastText != "" || !strings.Contains(o.LastError, "rate_limit: API Error: rate_limit") {
		t.Fatalf("the failed turn: %+v", o)
	}
	a.send(t, key, "m2", "next")
	if o := a.settledUnblocked(t, key, jt, 1); o.LastText != claudeReply(1, "next") || o.LastError != "" {
		t.Fatalf("the next turn: %+v", o)
	}
}

// Claude Code before 2.1.47 gives the Stop hook no last_assistant_message
// and its transcript lags the hook: each turn still settles with its own
// text, never the previous turn's.
func TestClaudeTUIOldVersionLaggingTranscript(t *testing.T) {
	a := newAdapterHost(t)
	key := "cold"
	s := a.specOf(claudeTUI, "full-access")
	s.Env["CLAUDE_DOUBLE_VERSION"] = "2.1.46"
	jt := a.startSpec(t, key, s)
	for i, text := range []string{"one", "two", "three"} {
		a.send(t, key, "m"+text, text)
		if o := a.settledUnblocked(t, key, jt, int64(i)); o.LastText != claudeReply(i+1, text) || o.LastError != "" {
			t.Fatalf("turn %d: %q (error %q)", i+1, o.LastText, o.LastError)
		}
	}
}

// On a user's own machine (the local host: the plugin does not own its
// home) a fresh home's first-run screens show before any hook: the job
// reads blocked, pending naming each screen, and answers reach them; the
// plugin writes nothing in the home.
func TestClaudeTUIFirstRunScreens(t *testing.T) {
	a := newAdapterHost(t)
	conf := filepath.Join(a.root, ".claude.json")
	if err := os.Remove(conf); err != nil {
		t.Fatal(err)
	}
	key := "cfr"
	sp := a.specOf(claudeTUI, "full-access")
	sp.Env["ANTHROPIC_API_KEY"] = "sk-ant-test-secret-0123456789abcdefghij"
	jt := a.startSpec(t, key, sp)
	drive.ClaudeScreens(t, func() protocol.Reading { return a.reading(t, key) }, func(keys string) {
		drive.Call(t, a.p, protocol.MethodChannelAnswer, protocol.AnswerParams{Base: base(key), Keys: []string{keys}})
	})
	a.send(t, key, "m1", "hi")
	if o := a.settledUnblocked(t, key, jt, 0); o.LastText != claudeReply(1, "hi") {
		t.Fatalf("after the screens: %+v", o)
	}
	if _, err := os.Stat(conf); err == nil {
		t.Fatal("the plugin wrote ~/.claude.json on a user's machine")
	}
}

// On a host the plugin owns (a container, a pod: Options.OwnsHome) the
// adapter pre-answers the first-run screens in the home (onboarding, the
// folder's trust, the job's API key, the bypass-mode warning), keeping
// what the file held: the first turn needs nobody at the pane.
func TestClaudeTUIOwnedHomePreAnswered(t *testing.T) {
	a := newAdapterHost(t, func(o *tmuxjob.Options) { o.OwnsHome = true })
	conf := filepath.Join(a.root, ".claude.json")
	if err := os.WriteFile(conf, []byte(`{"numStartups":2,"projects":{"/elsewhere":{"hasTrustDialogAccepted":false}}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := "cown"
	s := a.specOf(claudeTUI, "full-access")
	s.Cmd = "claude --dangerously-skip-permissions"
	s.Env["ANTHROPIC_API_KEY"] = "sk-ant-test-secret-0123456789abcdefghij"
	jt := a.startSpec(t, key, s)
	a.send(t, key, "m1", "hi")
	if o := a.settledUnblocked(t, key, jt, 0); o.LastText != claudeReply(1, "hi") {
		t.Fatalf("the first turn: %+v", o)
	}
	var c struct {
		NumStartups            int
		HasCompletedOnboarding bool
		Projects               map[string]struct{ HasTrustDialogAccepted bool }
		CustomAPIKeyResponses  struct{ Approved []string } `json:"customApiKeyResponses"`
	}
	b, err := os.ReadFile(conf)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.NumStartups != 2 || !c.HasCompletedOnboarding || !c.Projects[a.cwd].HasTrustDialogAccepted ||
		len(c.Projects) != 2 || len(c.CustomAPIKeyResponses.Approved) != 1 || c.CustomAPIKeyResponses.Approved[0] != "0123456789abcdefghij" {
		t.Fatalf("~/.claude.json: %s (%v)", b, err)
	}
}

// A turn the CLI ends by exiting (here /exit, Claude Code's SessionEnd
// with no Stop) settles with the exit, not busy for ever.
func TestClaudeTUIExitSettlesTheTurn(t *testing.T) {
	a := newAdapterHost(t)
	key := "cx"
	jt := a.start(t, claudeTUI, key, "full-access")
	a.command(t, key, "exit", "")
	if o := a.settledUnblocked(t, key, jt, 0); o.LastError != "claude exited 0" {
		t.Fatalf("the /exit turn: %+v", o)
	}
}
