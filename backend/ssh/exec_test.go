package ssh

import (
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
)

func TestExecBasics(t *testing.T) {
	s, cfg := server(t, testsshd.Options{})
	d, _ := inproc(t, cfg)
	res, r := d.exec("box", "echo out; echo err >&2; readlink /proc/$$/exe; id -un; exit 7", ".", 30*time.Second)
	if r != nil {
		t.Fatalf("exec: %s", r.Message)
	}
	if res.ExitCode == nil || *res.ExitCode != 7 {
		t.Fatalf("exit %s, want 7", fmtExit(res.ExitCode))
	}
	if res.Stderr != "err\n" {
		t.Errorf("stderr %q, want %q", res.Stderr, "err\n")
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 3 || lines[0] != "out" || lines[2] != s.User {
		t.Fatalf("stdout %q", res.Stdout)
	}
	if lines[1] != "/usr/bin/dash" && lines[1] != "/bin/dash" {
		t.Errorf("script ran under %s, want /bin/sh (dash) whatever the login shell (bash)", lines[1])
	}
	if res.Partial {
		t.Error("partial set on a small output")
	}
}

// TestScriptStdin: a command in the script that reads stdin gets /dev/null,
// never the rest of the script; the script sees no wrapper variables.
func TestScriptStdin(t *testing.T) {
	d := onBox(t)
	out := d.mustExec("box", "cat; echo after-cat\nread x || echo eof\necho \"[$__mu_w$__mu_p]\"\n")
	if out != "after-cat\neof\n[]\n" {
		t.Fatalf("stdout %q", out)
	}
	res, r := d.exec("box", "echo one\nexit 3\necho never", ".", 30*time.Second)
	if r != nil || res.ExitCode == nil || *res.ExitCode != 3 || res.Stdout != "one\n" {
		t.Fatalf("exit in a script: %+v %+v", res, r)
	}
	res, r = d.exec("box", "echo ok\nif then fi\n", ".", 30*time.Second)
	if r != nil || res.ExitCode == nil || *res.ExitCode == 0 || res.Stderr == "" {
		t.Fatalf("syntax error: %+v %+v", res, r)
	}
}
