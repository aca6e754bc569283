package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// "gone is a proof: the machine and its worktrees no longer exist". A run
// on a host, started by one invocation, is ended by another invocation's
// host.release before that release answers: it never finishes later, and
// its own call answers unknown-outcome (it may have done part of its work).
func TestReleaseEndsTheHostsRunsBeforeItAnswers(t *testing.T) {
	state := t.TempDir()
	a, b := start(t, "--state", state), start(t, "--state", state)
	acq := drive.Call(t, a, protocol.MethodHostAcquire, acquireP("k1", nil))
	ht := protocol.Target{Host: protocol.HostRef{Name: "pool", Handle: acq.Handle, Instance: "fake"}}
	out := t.TempDir()
	pidFile, late := filepath.Join(out, "pid"), filepath.Join(out, "late")
	script := "echo $$ > " + words.ShQuote(pidFile) + "; sleep 30; mkdir " + words.ShQuote(late)
	answered := make(chan *protocol.ExecResult, 1)
	errs := make(chan *caller.RemoteError, 1)
	go func() {
		res, err := drive.Try(t, a, protocol.MethodLinkExec, protocol.ExecParams{Base: protocol.Base{Target: ht}, Script: script, Cwd: ".", TimeoutMs: 60000})
		if err != nil {
			errs <- err
			return
		}
		answered <- &res
	}()
	var pid int
	if !waitfor.Poll(time.Minute, func() bool {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	}) {
		t.Fatal("the run never started")
	}
	drive.Call(t, b, protocol.MethodHostRelease, protocol.KeyParams{Base: protocol.Base{Target: ht}, Key: "k1"})
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("host.release answered while the host's run (pid %d) still runs", pid)
	}
	select {
	case res := <-answered:
		t.Fatalf("the run cut by its host's release answered %s, want unknown-outcome", words.JSON(res))
	case re := <-errs:
		if re.Kind != protocol.UnknownOutcome {
			t.Fatalf("the run cut by its host's release: %v, want unknown-outcome", re)
		}
	case <-time.After(time.Minute):
		t.Fatal("the run cut by its host's release never answered")
	}
	if _, err := os.Stat(late); err == nil {
		t.Fatal("the run went on after its host was released")
	}
}

// A handle host.status reads gone runs nothing: released, or never in the
// fake's world.
func TestAGoneHandleRunsNothing(t *testing.T) {
	p := start(t)
	acq := drive.Call(t, p, protocol.MethodHostAcquire, acquireP("k1", nil))
	drive.Call(t, p, protocol.MethodHostRelease, protocol.KeyParams{Base: protocol.Base{Target: drive.HostTarget("pool")}, Key: "k1"})
	for _, handle := range []string{acq.Handle, "fake-never-acquired"} {
		ht := protocol.Target{Host: protocol.HostRef{Name: "pool", Handle: handle}}
		if st := drive.Call(t, p, protocol.MethodHostStatus, protocol.Base{Target: ht}); st.State != protocol.HostGone {
			t.Fatalf("%s: status %s, want gone", handle, words.JSON(st))
		}
		if re := drive.Err(t, p, protocol.MethodLinkExec, protocol.ExecParams{Base: protocol.Base{Target: ht}, Script: "true", Cwd: ".", TimeoutMs: 5000}); re == nil || re.Kind != protocol.Permanent {
			t.Fatalf("%s: link.exec on a gone host: %v, want permanent", handle, re)
		}
		jt := agentTarget("pool", "ws", "a1", "job-"+handle, "")
		jt.Host.Handle = handle
		if re := drive.Err(t, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: jt}, Key: "job-" + handle, Spec: spec("ws", "a1")}); re == nil || re.Kind != protocol.Permanent {
			t.Fatalf("%s: job.start on a gone host: %v, want permanent", handle, re)
		}
	}
}

// A handle is unique in one world only (every world's first host is
// host-1): releasing a host of one world leaves another world's runs be.
func TestReleaseLeavesAnotherWorldsRuns(t *testing.T) {
	a, b := start(t, "--state", t.TempDir()), start(t, "--state", t.TempDir())
	ha := drive.Call(t, a, protocol.MethodHostAcquire, acquireP("k1", nil))
	hb := drive.Call(t, b, protocol.MethodHostAcquire, acquireP("k1", nil))
	if ha.Handle != hb.Handle {
		t.Logf("the two worlds' handles differ (%s, %s): the test still holds", ha.Handle, hb.Handle)
	}
	ta := protocol.Target{Host: protocol.HostRef{Name: "pool", Handle: ha.Handle, Instance: "fake"}}
	tb := protocol.Target{Host: protocol.HostRef{Name: "pool", Handle: hb.Handle, Instance: "fake"}}
	started := filepath.Join(t.TempDir(), "started")
	res := make(chan protocol.ExecResult, 1)
	go func() {
		res <- drive.Call(t, a, protocol.MethodLinkExec, protocol.ExecParams{Base: protocol.Base{Target: ta},
			Script: "touch " + words.ShQuote(started) + "; sleep 2; echo done", Cwd: ".", TimeoutMs: 60000})
	}()
	if !waitfor.Poll(time.Minute, func() bool { _, err := os.Stat(started); return err == nil }) {
		t.Fatal("the run never started")
	}
	drive.Call(t, b, protocol.MethodHostRelease, protocol.KeyParams{Base: protocol.Base{Target: tb}, Key: "k1"})
	r := <-res
	if r.ExitCode == nil || *r.ExitCode != 0 || r.Stdout != "done\n" {
		t.Fatalf("another world's release cut this world's run: %s", words.JSON(r))
	}
}
