package tmuxjob

import (
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/protocol"
)

func TestHarnessSelection(t *testing.T) {
	for _, c := range []struct{ harness, cmd, want string }{
		{"codex", "my-wrapper --x", "codex"}, // spec.harness names an adapter
		{"claude-print", "claude --model opus", "claude-print"},
		{"", "codex", "codex"}, // else the program cmd runs
		{"contract", "/usr/local/bin/codex -m o3", "codex"},
		{"", "exec env OPENAI_BASE_URL=http://x codex", "codex"},
		{"", "'codex' exec", "codex"},
		{"", "FOO=1 sh mu-test-agent", ""}, // unknown: the agent follows the contract
		{"test", "exec sh '/tmp/a b/mu-test-agent'", ""},
		{"", "", ""},
	} {
		if got := harnessOf(protocol.JobSpec{Harness: c.harness, Cmd: c.cmd}); got != c.want {
			t.Errorf("harness %q cmd %q: %q, want %q", c.harness, c.cmd, got, c.want)
		}
	}
}

func TestCheckRole(t *testing.T) {
	for _, h := range []string{"", "codex", "claude-print"} {
		if err := checkRole(h, "full-access"); err != nil {
			t.Errorf("%q full-access: %v", h, err)
		}
	}
	if err := checkRole("codex", "read-only"); err != nil {
		t.Errorf("codex read-only: %v", err)
	}
	err := checkRole("", "read-only")
	if pe, ok := err.(*protocol.Error); !ok || pe.Kind != protocol.Permanent || pe.Remedy == "" || !strings.Contains(pe.Message, "codex") {
		t.Errorf("no adapter, read-only: %v", err)
	}
	if err := checkRole("codex", "admin"); err == nil {
		t.Error("an unknown role passed")
	}
}

func TestAdapterScriptsAreWhole(t *testing.T) {
	if adapterScript("nope") != "" {
		t.Error("an unknown harness has a program")
	}
	for _, n := range Harnesses() {
		s := adapterScript(n)
		if !strings.HasPrefix(s, "#!/bin/sh") {
			t.Errorf("%s: the program does not start with lib.sh", n)
		}
		for _, p := range adapters[n].parts {
			b, err := adapterFS.ReadFile("adapters/" + p)
			if err != nil || !strings.Contains(s, string(b)) && !strings.Contains(s, shQuote(string(b))) {
				t.Errorf("%s: the program lacks %s (%v)", n, p, err)
			}
		}
	}
}
