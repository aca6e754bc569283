package ssh

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/sshclient"
	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/crashdrill"
	"github.com/mu-org/mu-plugins/internal/testutil/gitrepo"
	"github.com/mu-org/mu-plugins/protocol"
)

// TestControlMaster: with a master running at the config's ControlPath,
// every call goes through it (the server sees no new login), and all the
// link relies on holds there: exit codes and streams, the timeout stop
// ("stopping"), slots under concurrency, git push and fetch through the
// shim, and checkSteps naming the master. Once the master is gone, the
// plugin connects by itself.
func TestControlMaster(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	ctl := filepath.Join(t.TempDir(), "ctl")
	cfg := testsshd.WriteConfig(t, s.HostBlock("box")+"  ControlPath "+ctl+"\n")
	master := testsshd.StartMaster(t, cfg, ctl, "box")
	before := s.Logins()

	d := subproc(t, nil, "--config", cfg)
	res, r := d.exec("box", "echo out; echo err >&2; exit 7", ".", 20*time.Second)
	if r != nil || res.ExitCode == nil || *res.ExitCode != 7 || res.Stdout != "out\n" || res.Stderr != "err\n" {
		t.Fatalf("exec through the master: %+v %+v", res, r)
	}
	_, ok, detail := stepMap(d.steps("box"))
	if ok["resolve"] != "true" || ok["tcp"] != "null" || ok["hostkey"] != "true" || ok["auth"] != "true" || ok["home"] != "true" {
		t.Fatalf("steps %v %v", ok, detail)
	}
	want := fmt.Sprintf("the ControlMaster at %s (pid %d)", ctl, master.Process.Pid)
	for _, step := range []string{"resolve", "tcp", "hostkey", "auth"} {
		if !strings.Contains(detail[step], want) {
			t.Errorf("%s detail %q does not name %s", step, detail[step], want)
		}
	}

	t.Run("slots", func(t *testing.T) {
		errs := make(chan string, 20)
		crashdrill.Parallel(20, func(i int) {
			res, r := d.exec("box", fmt.Sprintf("sleep 0.2; echo %d", i), ".", 60*time.Second)
			if r != nil || res.Stdout != fmt.Sprintf("%d\n", i) {
				errs <- fmt.Sprintf("call %d: %+v %+v", i, res, r)
			}
		})
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	})
	t.Run("git", func(t *testing.T) {
		head := remoteRepo(t, d, "cm-src", 3)
		local := filepath.Join(t.TempDir(), "r")
		gitrepo.Git(t, "/", "init", "-q", local)
		if res, r := link(d, protocol.MethodLinkFetch, fetchParams("box", "cm-src", local, 60*time.Second)); r != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			t.Fatalf("fetch: %+v %+v", res, r)
		}
		if fh, _ := os.ReadFile(filepath.Join(local, ".git", "FETCH_HEAD")); !strings.HasPrefix(string(fh), head) {
			t.Fatalf("FETCH_HEAD %q, want %s", fh, head)
		}
		gitrepo.Git(t, local, "commit", "-q", "--allow-empty", "-m", "pushed")
		rev := gitrepo.Git(t, local, "rev-parse", "HEAD")
		if res, r := link(d, protocol.MethodLinkPush, pushParams("box", local, "cm-dst", rev, 60*time.Second)); r != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			t.Fatalf("push: %+v %+v", res, r)
		}
	})
	if n := s.Logins() - before; n != 0 {
		t.Errorf("the server saw %d login(s) besides the master's: the plugin did not use the master", n)
	}
	// Last: waitGone checks the host over fresh ssh logins of its own.
	t.Run("stopping", func(t *testing.T) {
		noWatchdog(t) // the stop over the control session, not the watchdog
		res, r := d.exec("box", runaway(3301), ".", 1500*time.Millisecond)
		if r != nil || res.ExitCode != nil {
			t.Fatalf("want a timed-out answer, got %+v %+v", res, r)
		}
		if left := waitGone(t, s, "sleep 3301", protocol5s); len(left) > 0 {
			t.Fatalf("left running through the master:\n%s", strings.Join(left, "\n"))
		}
	})

	master.Process.Kill()
	master.Wait()
	beforeDirect := s.Logins()
	d2 := subproc(t, nil, "--config", cfg)
	d2.mustExec("box", "true")
	if s.Logins() != beforeDirect+1 {
		t.Fatal("with the master gone, the plugin did not connect by itself")
	}
	if _, err := os.Stat(ctl); err == nil {
		if probe, _ := sshclient.ProbeMaster(t.Context(), ctl); probe != nil {
			t.Fatal("the plugin started a master")
		}
	}
}

const protocol5s = 5 * time.Second

// TestControlMasterNotStarted: ControlMaster auto with no master running:
// the plugin connects by itself and never becomes the master (ssh would).
func TestControlMasterNotStarted(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	ctl := filepath.Join(t.TempDir(), "ctl")
	cfg := testsshd.WriteConfig(t, s.HostBlock("box")+"  ControlMaster auto\n  ControlPath "+ctl+"\n  ControlPersist yes\n")
	before := s.Logins()
	expectOK(t, Config{SSHConfig: cfg})
	if s.Logins() != before+1 {
		t.Fatal("no direct login")
	}
	if _, err := os.Stat(ctl); err == nil {
		t.Fatal("a control socket appeared: the plugin must never start a master")
	}
}

// TestControlMasterAutoask: a master that would confirm every shared
// session (autoask) is not bypassed silently: a hand-back names it.
func TestControlMasterAutoask(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	ctl := filepath.Join(t.TempDir(), "ctl")
	plain := testsshd.WriteConfig(t, s.HostBlock("box")+"  ControlPath "+ctl+"\n")
	testsshd.StartMaster(t, plain, ctl, "box")
	cfg := testsshd.WriteConfig(t, s.HostBlock("box")+"  ControlMaster autoask\n  ControlPath "+ctl+"\n")
	expectHuman(t, Config{SSHConfig: cfg}, "ControlMaster autoask", "ControlMaster auto")
}
