package tmuxjob

import (
	"encoding/json"
	"os"
	"os/exec"
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
	if adapterScript("nope", false) != "" {
		t.Error("an unknown harness has a program")
	}
	for _, n := range Harnesses() {
		s := adapterScript(n, true)
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

// The adapters' JSON reader (adapters/json.awk, run by the host's awk)
// gives a string member's exact bytes, whatever encoding/json wrote.
func TestJSONReader(t *testing.T) {
	awk, err := adapterFS.ReadFile("adapters/json.awk")
	if err != nil {
		t.Fatal(err)
	}
	run := func(in string, args ...string) (string, bool) {
		t.Helper()
		cmd := exec.Command("awk", append(args, string(awk))...)
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		return string(out), err == nil
	}
	texts := []string{"", "plain", `quotes ' " \ and $(x) ` + "`id`", "lines\none\r\n\ttab\x01\x1f\x7f",
		"é ü 日本 😀 \u2028", "<>&", strings.Repeat("0123456789abcdef", 20000) + "\n[end]", "\\u0041 not an escape"}
	for _, text := range texts {
		v, _ := json.Marshal(map[string]any{"nested": map[string]string{"result": "no"}, "list": []string{"result"}, "result": text, "after": 1})
		if got, ok := run(string(v), "-v", "key=result"); !ok || got != text {
			t.Errorf("%.40q: got %.40q (%v)", text, got, ok)
		}
		// ASCII-only JSON (\u escapes, surrogate pairs) decodes the same.
		ascii := strings.NewReplacer("é", `\u00e9`, "😀", `\ud83d\ude00`, "日", `\u65e5`).Replace(string(v))
		if got, _ := run(ascii, "-v", "key=result"); got != text {
			t.Errorf("escaped %.40q: got %.40q", text, got)
		}
	}
	if _, ok := run(`{"x":{"result":"deep"}}`, "-v", "key=result"); ok {
		t.Error("a nested member was taken for a top-level one")
	}
	lines := `{"type":"thread.started","thread_id":"t-1"}` + "\n" + `{"type":"item.completed","item":{"text":"a"}}` + "\n" + `{"item":{"text":"b \"q\""}}` + "\n"
	if got, ok := run(lines, "-v", "key=thread_id"); !ok || got != "t-1" {
		t.Errorf("JSON lines: %q", got)
	}
	if got, ok := run(lines, "-v", "key=text", "-v", "deep=1"); !ok || got != `b "q"` {
		t.Errorf("deep, the last: %q", got)
	}
}

// onboard.awk adds the first-run answers to Claude Code's global config,
// whatever it held, and keeps the rest (a duplicate's last value counts,
// as JSON.parse keeps it, as encoding/json does).
func TestOnboardMerge(t *testing.T) {
	awk, err := adapterFS.ReadFile("adapters/onboard.awk")
	if err != nil {
		t.Fatal(err)
	}
	type conf struct {
		HasCompletedOnboarding, BypassPermissionsModeAccepted bool
		Theme                                                 string
		NumStartups                                           int
		Projects                                              map[string]struct{ HasTrustDialogAccepted, Kept bool }
		CustomAPIKeyResponses                                 *struct{ Approved []string } `json:"customApiKeyResponses"`
	}
	for _, c := range []struct {
		in, key, theme string
		startups       int
		projects       int
	}{
		{"", `"k-20"`, "dark", 0, 1},
		{"{}\n", "", "dark", 0, 1},
		{` { "numStartups" : 3, "theme":"light", "projects": { "/x": {"kept": true, "h": ["a{\"}", {"b": [1]}]} } }`, "", "light", 3, 2},
		{`{"projects":{},"theme":"light","customApiKeyResponses":{"approved":["old"]}}`, `"k-20"`, "light", 0, 1},
		{`{"projects":{"/w a\"b":{"hasTrustDialogAccepted":false,"kept":true}}}`, "", "dark", 0, 1},
	} {
		cmd := exec.Command("awk", string(awk))
		cmd.Env = append(os.Environ(), `ONBOARD_CWD="/w a\"b"`, "ONBOARD_KEY="+c.key)
		cmd.Stdin = strings.NewReader(c.in)
		out, err := cmd.Output()
		var got conf
		if err == nil {
			err = json.Unmarshal(out, &got)
		}
		if err != nil || !got.HasCompletedOnboarding || !got.BypassPermissionsModeAccepted || got.Theme != c.theme || got.NumStartups != c.startups ||
			!got.Projects[`/w a"b`].HasTrustDialogAccepted || len(got.Projects) != c.projects || (c.projects == 2 && !got.Projects["/x"].Kept) ||
			(c.key != "") != (got.CustomAPIKeyResponses != nil && len(got.CustomAPIKeyResponses.Approved) == 1 && got.CustomAPIKeyResponses.Approved[0] == "k-20") {
			t.Errorf("%q: %s (%v)", c.in, out, err)
		}
	}
}
