// Package panes is a tmux server of the test's own, where a job's view
// runs as it runs in mu's panes (Panes).
package panes

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
)

// Panes is a tmux server of the test's own on this machine: mu's panes,
// where a job's view runs as mu runs it. It is killed when the test ends.
type Panes struct{ sock string }

// NewPanes starts nothing yet: the server starts with the first pane.
func NewPanes(t testing.TB) *Panes {
	t.Helper()
	dir, err := os.MkdirTemp("", "mu-tmux")
	if err != nil {
		t.Fatal(err)
	}
	p := &Panes{sock: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", p.sock, "kill-server").Run()
		os.RemoveAll(dir)
	})
	return p
}

// Run runs tmux args on the server; a failure fails the test.
func (p *Panes) Run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Open runs a view's command in a pane (session name) of its own, as mu
// does: under sh with env, stdin from /dev/null. The pane stays after the
// command exits, saying how it exited ("[the view exited: N]").
func (p *Panes) Open(t testing.TB, name, command string, env map[string]string) {
	t.Helper()
	args := []string{"new-session", "-d", "-s", name, "-x", "160", "-y", "48"}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-e", k+"="+env[k])
	}
	args = append(args, "--", "/bin/sh", "-c", "(exec </dev/null; "+command+`); echo "[the view exited: $?]"; exec sleep 3600`)
	p.Run(t, args...)
}

// Shows waits until the pane name shows want (its last 200 lines).
func (p *Panes) Shows(t testing.TB, name, want string) {
	t.Helper()
	var got string
	if !waitfor.Poll(waitfor.Patience, func() bool {
		got = p.Run(t, "capture-pane", "-p", "-J", "-S", "-200", "-t", "="+name+":")
		return strings.Contains(got, want)
	}) {
		t.Fatalf("the pane %s never showed %q; it shows:\n%s", name, want, got)
	}
}
