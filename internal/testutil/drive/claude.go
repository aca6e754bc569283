package drive

import (
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
)

// ClaudeTurns runs, through the claude adapter over the Claude Code
// double (docs/harness.md "Test doubles"), the turns that show a job holds
// up unattended: a message; a long one (over the 8,000 bytes a hook shows:
// read from its file, with no permission dialog); one ending on an API
// error (StopFailure: its error names it); and one after it. send
// delivers turn i's text, settled waits for turn i's observation.
func ClaudeTurns(t testing.TB, send func(i int, text string), settled func(i int) protocol.Observation) {
	t.Helper()
	for i, text := range []string{"hello", strings.Repeat("y", 9000), "[[apierror:rate_limit]]", "after"} {
		send(i, text)
		o := settled(i)
		ok := strings.HasSuffix(o.LastText, text) && o.LastError == ""
		switch i {
		case 1:
			ok = strings.HasSuffix(o.LastText, " [read 9000 bytes]") && o.LastError == ""
		case 2:
			ok = o.LastText == "" && strings.Contains(o.LastError, "api error rate_limit")
		}
		if !ok {
			t.Fatalf("turn %d: %q (error %q)", i+1, o.LastText[max(0, len(o.LastText)-100):], o.LastError)
		}
	}
}

// ClaudeScreens answers, one by one, the first-run screens the Claude
// Code double shows in a home where it never ran with a key in the
// environment (the theme picker, the API key approval, the folder trust),
// each once the job reads blocked naming it; then waits for the job to
// be idle. reading is the agent's channel.readStates reading.
func ClaudeScreens(t testing.TB, reading func() protocol.Reading, answer func(keys string)) {
	t.Helper()
	for _, s := range []struct{ screen, keys string }{{"theme picker", "Enter"}, {"API key approval", "1"}, {"folder trust", "Enter"}} {
		var r protocol.Reading
		waitfor.Eventually(t, "blocked on "+s.screen, func() bool {
			r = reading()
			return r.State == protocol.TurnBlocked && strings.Contains(r.Pending, s.screen)
		})
		if !strings.Contains(r.Pending, "channel.answer") {
			t.Fatalf("no remedy: %q", r.Pending)
		}
		answer(s.keys)
		waitfor.Eventually(t, "the answer taken", func() bool { return reading().Pending != r.Pending })
	}
	waitfor.Eventually(t, "ready", func() bool { return reading().State == protocol.TurnIdle })
}
