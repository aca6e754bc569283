package ssh

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// runaway starts every kind of child the "stopping" guarantee covers, each
// marked with a unique sleep length, then blocks.
func runaway(n int) string {
	return fmt.Sprintf(`sleep %d0 &
nohup sleep %d1 >/dev/null 2>&1 &
( trap '' HUP TERM; sleep %d2 ) &
sh -c 'trap "" HUP TERM INT; sleep %d3' &
echo started
sleep %d4
`, n, n, n, n, n)
}

// waitGone polls the host (fresh OpenSSH sessions) until nothing marked is
// left, within bound, and returns what was left at the end.
func waitGone(t *testing.T, s *testsshd.Server, marker string, bound time.Duration) []string {
	t.Helper()
	var left []string
	waitfor.Poll(bound, func() bool { left = remoteLeft(t, s, marker); return len(left) == 0 })
	return left
}

// noWatchdog puts the remote watchdog 120 s past a run's timeout for one
// test: what stops a timed-out run there is the plugin's stop, not the
// watchdog.
func noWatchdog(t *testing.T) {
	old := watchdogSlack
	watchdogSlack = 120
	t.Cleanup(func() { watchdogSlack = old })
}

// setShell points the wrapper at another /bin/sh for one test.
func setShell(t *testing.T, sh string) {
	old := remoteShell
	remoteShell = sh
	t.Cleanup(func() { remoteShell = old })
}

func TestStoppingOnTimeout(t *testing.T) {
	shells := []struct{ name, path string }{{"dash", "/bin/sh"}, {"bash", "/bin/bash"}, {"busybox", ""}}
	s, cfg := server(t, testsshd.Options{})
	// The remote watchdog would kill the group too, a little later: push it
	// out of the grace so this test proves the kill over the control session.
	noWatchdog(t)
	bb := busyboxSh(t)
	for i, sh := range shells {
		t.Run(sh.name, func(t *testing.T) {
			if sh.name == "busybox" {
				sh.path = bb
			}
			setShell(t, sh.path)
			d, _ := inproc(t, cfg)
			n := 31410 + i*10
			marker := fmt.Sprintf("sleep %d", n/10)
			res, r := d.exec("box", runaway(n/10), ".", 1500*time.Millisecond)
			if r != nil {
				t.Fatalf("exec: %s", r.Message)
			}
			if res.ExitCode != nil {
				t.Fatalf("exitCode %d, want null on timeout", *res.ExitCode)
			}
			if res.Stdout != "started\n" {
				t.Errorf("stdout %q: the output so far belongs in a timed-out answer", res.Stdout)
			}
			// The guarantee: within one grace (5 s) nothing is left. Bounded at
			// two graces for a noisy machine.
			if left := waitGone(t, s, marker, 10*time.Second); len(left) > 0 {
				t.Fatalf("still running after the grace:\n%s", strings.Join(left, "\n"))
			}
		})
	}
}

// busyboxSh makes an executable, readable by the test user, that runs
// busybox's sh with its arguments: the wrapper runs "PATH -c …" and "PATH -s".
func busyboxSh(t *testing.T) string {
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatalf("busybox is required for the busybox sh test (apt-get install -y busybox): %v", err)
	}
	dir, err := os.MkdirTemp("", "mu-busybox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "sh")
	if err := os.WriteFile(path, []byte("#!/bin/dash\nexec "+bb+" sh \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStoppingOnShutdown(t *testing.T) {
	s, cfg := server(t, testsshd.Options{})
	d := subproc(t, nil, "--config", cfg.SSHConfig)
	d.runUntilStopped("box", runaway(3150), 120*time.Second)
	// Wait until the script runs, then close stdin as mu does at exit.
	if left := waitStarted(t, s, "sleep 31504"); !left {
		t.Fatal("the script never started")
	}
	if rep := d.CloseStdin(); rep.LeaderKilled() { // killed after 15 s
		t.Fatalf("the plugin did not exit after stdin EOF: %+v", rep)
	}
	if left := waitGone(t, s, "sleep 3150", 10*time.Second); len(left) > 0 {
		t.Fatalf("left running after the plugin exited:\n%s", strings.Join(left, "\n"))
	}
}

func waitStarted(t *testing.T, s *testsshd.Server, marker string) bool {
	return waitfor.Poll(30*time.Second, func() bool { return len(remoteLeft(t, s, marker)) > 0 })
}

// TestWatchdogCoversLostConnection: the plugin is killed outright (no stop
// at all); the remote watchdog still kills the script at its timeout.
func TestWatchdogCoversLostConnection(t *testing.T) {
	s, cfg := server(t, testsshd.Options{})
	d := subproc(t, nil, "--config", cfg.SSHConfig)
	d.runUntilStopped("box", runaway(3160), 2*time.Second)
	if !waitStarted(t, s, "sleep 31604") {
		t.Fatal("the script never started")
	}
	_ = syscall.Kill(d.Pgid(), syscall.SIGKILL) // the plugin itself, as the leader of its group
	if left := waitGone(t, s, "sleep 3160", 30*time.Second); len(left) > 0 {
		t.Fatalf("the watchdog left these running:\n%s", strings.Join(left, "\n"))
	}
}

// TestStoppingOnCancel: $/cancel of a running link.exec stops its script
// the same way a timeout does.
func TestStoppingOnCancel(t *testing.T) {
	s, cfg := server(t, testsshd.Options{})
	noWatchdog(t)
	c, _ := local(t, cfg)
	r := drive.StartRaw(t, c) // the call's id is the test's to cancel
	r.Send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":{"min":1,"max":1},"mu":"5"}}`)
	r.Recv()
	req, err := caller.NewRequest(protocol.MethodLinkExec.Name, execParams("box", runaway(3170), ".", 120*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r.Send(string(req.Line(2, time.Now().Add(125*time.Second).UnixMilli())))
	if !waitStarted(t, s, "sleep 31704") {
		t.Fatal("the script never started")
	}
	r.Send(`{"jsonrpc":"2.0","method":"$/cancel","params":{"id":2}}`)
	if l := r.Recv(); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":2,"error":`) {
		t.Fatalf("a cancelled call answered %s", l)
	}
	if left := waitGone(t, s, "sleep 3170", 10*time.Second); len(left) > 0 {
		t.Fatalf("left after $/cancel:\n%s", strings.Join(left, "\n"))
	}
}

// TestStoppingAsRoot: root logins (no SSH signal support before OpenSSH
// 9.8) are stopped the same way: the wrapper needs no signal request.
func TestStoppingAsRoot(t *testing.T) {
	s, cfg := server(t, testsshd.Options{Root: true})
	noWatchdog(t)
	d, _ := inproc(t, cfg)
	res, r := d.exec("box", runaway(3195), ".", 1500*time.Millisecond)
	if r != nil || res.ExitCode != nil {
		t.Fatalf("want a timed-out answer: %+v %+v", res, r)
	}
	if left := waitGone(t, s, "sleep 3195", 10*time.Second); len(left) > 0 {
		t.Fatalf("still running after the grace:\n%s", strings.Join(left, "\n"))
	}
}
