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
	end := time.Now().Add(bound)
	for {
		left := remoteLeft(t, s, marker)
		if len(left) == 0 || time.Now().After(end) {
			return left
		}
		time.Sleep(200 * time.Millisecond)
	}
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
	old := watchdogSlack
	watchdogSlack = 120
	t.Cleanup(func() { watchdogSlack = old })
	bb := busyboxSh(t)
	for i, sh := range shells {
		t.Run(sh.name, func(t *testing.T) {
			if sh.name == "busybox" {
				sh.path = bb
			}
			setShell(t, sh.path)
			d, _, _ := inproc(t, cfg)
			n := 31410 + i*10
			marker := fmt.Sprintf("sleep %d", n/10)
			res, r := d.exec("box", runaway(n/10), ".", 1500*time.Millisecond)
			if r.Error != nil {
				t.Fatalf("exec: %s", r.Error.Message)
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
	d, cmd, _ := subproc(t, nil, "--config", cfg.SSHConfig)
	d.initialize()
	ch, _ := d.send("link.exec", execParams("box", runaway(3150), ".", 120*time.Second))
	// Wait until the script runs, then close stdin as mu does at exit.
	if left := waitStarted(t, s, "sleep 31504"); !left {
		t.Fatal("the script never started")
	}
	d.in.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		t.Fatal("the plugin did not exit after stdin EOF")
	}
	select {
	case <-ch:
	default:
	}
	if left := waitGone(t, s, "sleep 3150", 10*time.Second); len(left) > 0 {
		t.Fatalf("left running after the plugin exited:\n%s", strings.Join(left, "\n"))
	}
}

func waitStarted(t *testing.T, s *testsshd.Server, marker string) bool {
	end := time.Now().Add(30 * time.Second)
	for time.Now().Before(end) {
		if len(remoteLeft(t, s, marker)) > 0 {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// TestWatchdogCoversLostConnection: the plugin is killed outright (no stop
// at all); the remote watchdog still kills the script at its timeout.
func TestWatchdogCoversLostConnection(t *testing.T) {
	s, cfg := server(t, testsshd.Options{})
	d, cmd, _ := subproc(t, nil, "--config", cfg.SSHConfig)
	d.initialize()
	d.send("link.exec", execParams("box", runaway(3160), ".", 2*time.Second))
	if !waitStarted(t, s, "sleep 31604") {
		t.Fatal("the script never started")
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	if left := waitGone(t, s, "sleep 3160", 30*time.Second); len(left) > 0 {
		t.Fatalf("the watchdog left these running:\n%s", strings.Join(left, "\n"))
	}
}

// TestStoppingOnCancel: $/cancel of a running link.exec stops its script
// the same way a timeout does.
func TestStoppingOnCancel(t *testing.T) {
	s, cfg := server(t, testsshd.Options{})
	old := watchdogSlack
	watchdogSlack = 120
	t.Cleanup(func() { watchdogSlack = old })
	d, _, _ := inproc(t, cfg)
	ch, id := d.send("link.exec", execParams("box", runaway(3170), ".", 120*time.Second))
	if !waitStarted(t, s, "sleep 31704") {
		t.Fatal("the script never started")
	}
	d.notify("$/cancel", map[string]any{"id": id})
	r := d.await(ch, "cancelled link.exec")
	if r.Error == nil {
		t.Fatalf("a cancelled call answered %s", r.Result)
	}
	if left := waitGone(t, s, "sleep 3170", 10*time.Second); len(left) > 0 {
		t.Fatalf("left after $/cancel:\n%s", strings.Join(left, "\n"))
	}
}

// TestStoppingAsRoot: root logins (no SSH signal support before OpenSSH
// 9.8) are stopped the same way: the wrapper needs no signal request.
func TestStoppingAsRoot(t *testing.T) {
	s, cfg := server(t, testsshd.Options{Root: true})
	old := watchdogSlack
	watchdogSlack = 120
	t.Cleanup(func() { watchdogSlack = old })
	d, _, _ := inproc(t, cfg)
	res, r := d.exec("box", runaway(3195), ".", 1500*time.Millisecond)
	if r.Error != nil || res.ExitCode != nil {
		t.Fatalf("want a timed-out answer: %+v %+v", res, r.Error)
	}
	if left := waitGone(t, s, "sleep 3195", 10*time.Second); len(left) > 0 {
		t.Fatalf("still running after the grace:\n%s", strings.Join(left, "\n"))
	}
}
