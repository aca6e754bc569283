package main

import (
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
)

func acquireP(key string, params map[string]string) protocol.AcquireParams {
	return protocol.AcquireParams{Base: protocol.Base{Target: drive.HostTarget("pool")}, Key: key, Params: params}
}

func TestHostAcquireLookupStatusRelease(t *testing.T) {
	p := start(t)
	params := map[string]string{"ttl": "2h", "idle": "15m", "maxJobs": "3"}
	a := drive.Call(t, p, protocol.MethodHostAcquire, acquireP("k1", params))
	if a.Handle == "" || a.DeadlineAt == nil || a.IdleReclaimMs == nil || *a.IdleReclaimMs != 900000 || a.MaxJobs == nil || *a.MaxJobs != 3 {
		t.Fatalf("acquire: %s", words.JSON(a))
	}
	// An exact repeat (only the deadline differs) returns the first result.
	b := drive.Call(t, p, protocol.MethodHostAcquire, acquireP("k1", params))
	if words.JSON(a) != words.JSON(b) {
		t.Fatalf("repeat: %s, want %s", words.JSON(b), words.JSON(a))
	}
	if re := drive.Err(t, p, protocol.MethodHostAcquire, acquireP("k1", map[string]string{"ttl": "1h"})); re == nil || re.Kind != protocol.Permanent {
		t.Fatalf("the key with other params: %v, want permanent", re)
	}
	if re := drive.Err(t, p, protocol.MethodHostAcquire, acquireP("k9", map[string]string{"color": "red"})); re == nil || re.Kind != protocol.Permanent {
		t.Fatalf("an unknown param: %v, want permanent", re)
	}
	found := drive.Call(t, p, protocol.MethodHostLookup, protocol.LookupParams{Base: protocol.Base{Target: drive.HostTarget("pool")}, Key: "k1", Fence: true})
	if found.Found == nil || found.Found.Handle != a.Handle {
		t.Fatalf("lookup k1: %s", words.JSON(found))
	}
	none := drive.Call(t, p, protocol.MethodHostLookup, protocol.LookupParams{Base: protocol.Base{Target: drive.HostTarget("pool")}, Key: "k2", Fence: true})
	if !none.None {
		t.Fatalf("lookup k2: %s", words.JSON(none))
	}
	if re := drive.Err(t, p, protocol.MethodHostAcquire, acquireP("k2", nil)); re == nil || re.Kind != protocol.Permanent {
		t.Fatalf("acquire after a fenced none: %v, want refused", re)
	}

	ht := protocol.Target{Host: protocol.HostRef{Name: "pool", Handle: a.Handle, Instance: "fake"}}
	st := drive.Call(t, p, protocol.MethodHostStatus, protocol.Base{Target: ht})
	if st.State != protocol.HostUp || st.Handle != a.Handle || string(st.Facts["maxJobs"]) != "3" {
		t.Fatalf("status %s", words.JSON(st))
	}
	// A host without a fact sends it as null: the patch clears it.
	c := drive.Call(t, p, protocol.MethodHostAcquire, acquireP("k3", nil))
	st = drive.Call(t, p, protocol.MethodHostStatus, protocol.Base{Target: protocol.Target{Host: protocol.HostRef{Name: "pool", Handle: c.Handle}}})
	if string(st.Facts["deadlineAt"]) != "null" {
		t.Fatalf("status without a ttl: %s, want deadlineAt null", words.JSON(st))
	}
	// A provider host's link runs in its own directory.
	r := drive.Call(t, p, protocol.MethodLinkExec, protocol.ExecParams{Base: protocol.Base{Target: ht}, Script: "basename $PWD", Cwd: ".", TimeoutMs: 5000})
	if r.Stdout != a.Handle+"\n" {
		t.Fatalf("exec on the provider host ran in %q", r.Stdout)
	}

	for i := 0; i < 2; i++ { // idempotent
		drive.Call(t, p, protocol.MethodHostRelease, protocol.KeyParams{Base: protocol.Base{Target: ht}, Key: "k1"})
	}
	gone := drive.Call(t, p, protocol.MethodHostStatus, protocol.Base{Target: ht})
	if gone.State != protocol.HostGone {
		t.Fatalf("status after release: %s", words.JSON(gone))
	}
	if re := drive.Err(t, p, protocol.MethodLinkExec, protocol.ExecParams{Base: protocol.Base{Target: ht}, Script: "true", Cwd: ".", TimeoutMs: 5000}); re == nil {
		t.Fatal("exec on a released host succeeded")
	}
	drive.Call(t, p, protocol.MethodHostRelease, protocol.KeyParams{Base: protocol.Base{Target: drive.HostTarget("pool")}, Key: "never-acquired"})
}

// A host whose acquire is still being made reads pending to another
// invocation; once its acquirer is gone before the effect landed, none.
func TestHostLookupPendingThenNone(t *testing.T) {
	state := t.TempDir()
	slow := start(t, "--state", state)
	done := make(chan error, 1)
	go func() {
		_, err := slow.Call(waitfor.Context(t, time.Minute), protocol.MethodHostAcquire.Name, acquireP("slow", map[string]string{"boot": "60s"}), 0)
		done <- err
	}()
	other := start(t, "--state", state)
	lp := protocol.LookupParams{Base: protocol.Base{Target: drive.HostTarget("pool")}, Key: "slow"}
	var l protocol.HostLookupResult
	if !waitfor.Poll(30*time.Second, func() bool {
		l = drive.Call(t, other, protocol.MethodHostLookup, lp)
		if !l.Pending && !l.None {
			t.Fatalf("lookup during the acquire: %s", words.JSON(l))
		}
		return l.Pending
	}) {
		t.Fatal("never saw pending")
	}
	slow.Stop()
	<-done
	l = drive.Call(t, other, protocol.MethodHostLookup, lp)
	if !l.None {
		t.Fatalf("lookup after the acquirer died: %s, want none", words.JSON(l))
	}
}
