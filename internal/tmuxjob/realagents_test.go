package tmuxjob_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealAgents runs the print-mode adapters against the real agent CLIs
// (`make e2e-agents`): opt-in (MU_E2E_AGENTS=1), and for each CLI only
// when it is on PATH and its key is in the environment, which reaches the
// job through spec.env alone. Two turns: the second must see the first
// (the session resumed). Nothing here asserts a
// model's wording beyond a token it was asked to repeat.
func TestRealAgents(t *testing.T) {
	if os.Getenv("MU_E2E_AGENTS") == "" {
		t.Skip("skip: the real agent CLIs run only under `make e2e-agents` (MU_E2E_AGENTS=1)")
	}
	for _, c := range []struct {
		harness, cli string
		keys         []string
	}{
		{"codex", "codex", []string{"OPENAI_API_KEY", "CODEX_API_KEY"}},
		{"claude-print", "claude", []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"}},
		{"claude", "claude", []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"}},
	} {
		t.Run(c.harness, func(t *testing.T) {
			path, err := exec.LookPath(c.cli)
			if err != nil {
				t.Skipf("skip: %s is not on PATH", c.cli)
			}
			env := map[string]string{"PATH": filepath.Dir(path) + ":/usr/local/bin:/usr/bin:/bin", "HOME": os.Getenv("HOME")}
			var secret string
			for _, k := range c.keys {
				if v := os.Getenv(k); v != "" {
					env[k], secret = v, v
				}
			}
			if secret == "" {
				t.Skipf("skip: none of %s is set", strings.Join(c.keys, ", "))
			}
			a := newAdapterHost(t)
			key := "real-" + c.harness
			s := spec(path)
			s.Harness, s.Cwd, s.Env = c.harness, a.cwd, env
			if c.harness == "claude" {
				// The TUI asks first whether to trust a folder it does not
				// know: the test runs in one the user trusts.
				if s.Cwd = os.Getenv("MU_E2E_CLAUDE_DIR"); s.Cwd == "" {
					t.Skip("skip: set MU_E2E_CLAUDE_DIR to a folder Claude Code trusts (its TUI asks first otherwise)")
				}
			}
			jt := a.startSpec(t, key, s)
			a.send(t, key, "r1", "Reply with exactly this token and nothing else: MU-ALPHA-7")
			if o := a.settled(t, jt, 0); !strings.Contains(o.LastText, "MU-ALPHA-7") || o.LastError != "" {
				t.Fatalf("turn 1: %+v", o)
			}
			a.send(t, key, "r2", "Reply with exactly the token you replied with last time, and nothing else.")
			if o := a.settled(t, jt, 1); !strings.Contains(o.LastText, "MU-ALPHA-7") {
				t.Fatalf("turn 2 did not resume the session: %+v", o)
			}
			if strings.Contains(a.p.Stderr.String(), secret) {
				t.Fatal("the key is in the plugin's stderr")
			}
			t.Logf("%s: two turns in one session through the %s adapter", path, c.harness)
		})
	}
}
