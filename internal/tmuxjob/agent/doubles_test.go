package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
)

// cli runs the installed double name with args and stdin, in a home of
// its own; it returns stdout and the exit code.
func cli(t *testing.T, home, name, stdin string, args ...string) (string, int) {
	t.Helper()
	path := filepath.Join(home, "bin", name)
	if _, err := os.Stat(path); err != nil {
		if err := agent.InstallDouble(context.Background(), tmuxjob.LocalRunner{}, name, path); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = home, append(os.Environ(), "HOME="+home, "CODEX_HOME=", "CLAUDE_CONFIG_DIR="), strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

const tricky = "quotes ' \" \\ $(x)\nline\ttab \x01 é 😀"

// codex exec --json prints the documented JSON lines, resumes a session by
// the thread_id it printed, writes -o's file, and fails on an unknown one.
func TestCodexDouble(t *testing.T) {
	home := t.TempDir()
	last := filepath.Join(home, "last")
	out, code := cli(t, home, "codex", tricky, "exec", "--json", "-o", last, "--skip-git-repo-check", "-")
	var ev []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		ev = append(ev, m)
	}
	if code != 0 || len(ev) != 4 || ev[0]["type"] != "thread.started" || ev[1]["type"] != "turn.started" || ev[3]["type"] != "turn.completed" {
		t.Fatalf("exit %d, events %v", code, ev)
	}
	item := ev[2]["item"].(map[string]any)
	if ev[2]["type"] != "item.completed" || item["type"] != "agent_message" || item["text"] != "codex[1]: "+tricky {
		t.Fatalf("the message: %v", ev[2])
	}
	if b, _ := os.ReadFile(last); string(b) != "codex[1]: "+tricky {
		t.Fatalf("-o wrote %q", b)
	}
	id := ev[0]["thread_id"].(string)
	if out, code := cli(t, home, "codex", "again", "exec", "--skip-git-repo-check", "resume", id, "-"); code != 0 || out != "codex[2]: again" {
		t.Fatalf("resume: exit %d, %q", code, out)
	}
	if _, code := cli(t, home, "codex", "x", "exec", "--skip-git-repo-check", "resume", "nope", "-"); code != 1 {
		t.Fatalf("resuming an unknown session: exit %d", code)
	}
	if _, code := cli(t, home, "codex", "x", "exec", "-"); code != 1 {
		t.Fatalf("outside a git repository without --skip-git-repo-check: exit %d", code)
	}
	out, code = cli(t, home, "codex", "[[error:boom]]", "exec", "--json", "--skip-git-repo-check", "-")
	if code != 1 || !strings.Contains(out, `{"type":"turn.failed","error":{"message":"boom"}}`) {
		t.Fatalf("a failed turn: exit %d, %q", code, out)
	}
}

// claude -p --output-format json prints the documented result object and
// resumes by its session_id; an unknown one fails as documented.
func TestClaudeDouble(t *testing.T) {
	home := t.TempDir()
	out, code := cli(t, home, "claude", tricky, "-p", "--output-format", "json")
	var r struct {
		Type      string `json:"type"`
		Subtype   string `json:"subtype"`
		Result    string `json:"result"`
		SessionID string `json:"session_id"`
		IsError   bool   `json:"is_error"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("exit %d: %q", code, out)
	}
	if r.Type != "result" || r.Subtype != "success" || r.IsError || r.Result != "claude[1]: "+tricky || r.SessionID == "" {
		t.Fatalf("%+v", r)
	}
	if out, code := cli(t, home, "claude", "", "-p", "--resume", r.SessionID, "next"); code != 0 || out != "claude[2]: next\n" {
		t.Fatalf("resume: exit %d, %q", code, out)
	}
	if _, code := cli(t, home, "claude", "x", "-p", "--resume", "nope"); code != 1 {
		t.Fatalf("resuming an unknown session: exit %d", code)
	}
}
