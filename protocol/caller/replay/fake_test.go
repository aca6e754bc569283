package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// Every resolution branch the fake can show, each against real processes:
// a fake that crashes around the effect (its world saved in --state), then
// a new fake (the next invocation) the resolver asks.

func TestAcquireCrashAfterLookupFinds(t *testing.T) {
	state, j := t.TempDir(), openJ(t)
	p1 := fake(t, state, crash(protocol.MethodHostAcquire.Name, "crash-after"))
	in := unknownEffect(t, j, p1, protocol.MethodHostAcquire.Name, acquireP("k1"))
	if in.Instance != "fake" || in.Pgid != p1.Pgid() || in.Key != "k1" || in.SHA256 != sha(in.Params) {
		t.Fatalf("intent: %+v", in)
	}
	gone(t, p1)
	p2 := fake(t, state, nil)
	found := resolveFound[protocol.AcquireResult](t, j, p2, in)
	if found.Handle == "" {
		t.Fatalf("found %+v: no handle", found)
	}
	w := world(t, state)
	if len(w.Hosts) != 1 || w.Hosts["k1"].Result.Handle != found.Handle {
		t.Fatalf("world hosts %+v, want exactly k1 = %s", w.Hosts, found.Handle)
	}
	if l := calls(p2, protocol.MethodHostLookup.Name); len(l) != 1 || !strings.Contains(l[0], `"fence":true`) {
		t.Fatalf("lookups sent: %q, want one fenced", l)
	}
	if l := calls(p2, protocol.MethodHostAcquire.Name); len(l) != 0 {
		t.Fatalf("the resolver acquired again: %q", l)
	}
	wantJournal(t, j, 0)
}

// A crash before the effect: the fenced lookup's none is final (the
// intent settled), and the first call, delayed (its exact params arriving
// now), is refused; the world holds nothing of it.
func TestCrashBeforeFencedNoneThenRefused(t *testing.T) {
	cases := []struct {
		name, method string
		params       any
		left         func(w fakeWorld) string // what the world wrongly holds
	}{
		{"host.acquire", protocol.MethodHostAcquire.Name, acquireP("k1"), func(w fakeWorld) string {
			if len(w.Hosts) != 0 || !w.Fenced["host:k1"] {
				return fmt.Sprintf("hosts %v, fenced %v", w.Hosts, w.Fenced)
			}
			return ""
		}},
		{"job.start", protocol.MethodJobStart.Name, jobP("j1", "ws", "a1"), func(w fakeWorld) string {
			if len(w.Jobs) != 0 {
				return fmt.Sprintf("jobs %+v", w.Jobs)
			}
			return ""
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state, j := t.TempDir(), openJ(t)
			p1 := fake(t, state, crash(c.method, "crash-before"))
			in := crashed(t, j, p1, c.method, c.params)
			p2 := fake(t, state, nil)
			wantState(t, resolve(t, j, p2, in), None, ReasonFenced)
			wantJournal(t, j, 0)
			wantRefused(t, p2, in)
			if left := c.left(world(t, state)); left != "" {
				t.Fatalf("world: %s", left)
			}
		})
	}
}

func TestJobStartCrashAfterLookupFinds(t *testing.T) {
	state, j := t.TempDir(), openJ(t)
	p1 := fake(t, state, crash(protocol.MethodJobStart.Name, "crash-after"))
	in := crashed(t, j, p1, protocol.MethodJobStart.Name, jobP("j1", "ws", "a1"))
	p2 := fake(t, state, nil)
	if f := resolveFound[protocol.JobFound](t, j, p2, in); f.Handle == "" || f.View == nil {
		t.Fatalf("found %+v: want a handle and a view", f)
	}
	if w := world(t, state); len(w.Jobs) != 1 || w.Jobs["j1"].State != "running" {
		t.Fatalf("world jobs %+v", w.Jobs)
	}
	if l := calls(p2, protocol.MethodJobStart.Name); len(l) != 0 {
		t.Fatalf("the resolver started again: %q", l)
	}
	wantJournal(t, j, 0)
}

// An at-start kind's lookup found carries baseline runs 0: the fake's
// does, and the resolver accepts it.
func TestJobStartAtStartCrashAfter(t *testing.T) {
	state, j := t.TempDir(), openJ(t)
	p1 := fake(t, state, crash(protocol.MethodJobStart.Name, "crash-after"), "--first-turn", "at-start")
	jp := jobP("j1", "ws", "a1")
	jp.Spec.FirstPrompt = &protocol.FirstPrompt{Text: "brief", MsgID: "m0"}
	in := crashed(t, j, p1, protocol.MethodJobStart.Name, jp)
	p2 := fake(t, state, nil, "--first-turn", "at-start")
	if f := resolveFound[protocol.JobFound](t, j, p2, in); f.Baseline == nil || f.Baseline.Runs != 0 {
		t.Fatalf("found %+v: want baseline runs 0", f)
	}
	if n := world(t, state).deliveries("ws/a1", "brief"); n != 1 {
		t.Fatalf("the first prompt was delivered %d times", n)
	}
}

func TestHostReleaseReissued(t *testing.T) {
	state, j := t.TempDir(), openJ(t)
	p1 := fake(t, state, crash(protocol.MethodHostRelease.Name, "crash-after"))
	mustEffect(t, j, p1, protocol.MethodHostAcquire.Name, acquireP("k1"))
	rel := protocol.KeyParams{Base: protocol.Base{Target: protocol.Target{Host: protocol.HostRef{Name: "pool"}}}, Key: "k1"}
	in := crashed(t, j, p1, protocol.MethodHostRelease.Name, rel)
	p2 := fake(t, state, nil)
	wantReissued(t, j, p2, in)
	if w := world(t, state); w.Hosts["k1"].State != "released" {
		t.Fatalf("host k1 is %q", w.Hosts["k1"].State)
	}
	wantJournal(t, j, 0)
}

func TestJobStopReissued(t *testing.T) {
	state, j := t.TempDir(), openJ(t)
	p1 := fake(t, state, crash(protocol.MethodJobStop.Name, "crash-before"))
	mustEffect(t, j, p1, protocol.MethodJobStart.Name, jobP("j1", "ws", "a1"))
	in := crashed(t, j, p1, protocol.MethodJobStop.Name, protocol.KeyParams{Base: protocol.Base{Target: agentT("ws", "a1", "j1")}, Key: "j1"})
	if w := world(t, state); w.Jobs["j1"].State != "running" {
		t.Fatalf("crash-before stopped the job: %q", w.Jobs["j1"].State)
	}
	p2 := fake(t, state, nil)
	wantReissued(t, j, p2, in)
	if w := world(t, state); w.Jobs["j1"].State != "ended" {
		t.Fatalf("job j1 is %q", w.Jobs["j1"].State)
	}
}

func TestSendCrashAfterReceiptAccepted(t *testing.T) {
	state, j := t.TempDir(), openJ(t)
	p1 := fake(t, state, crash(protocol.MethodChannelSend.Name, "crash-after"))
	mustEffect(t, j, p1, protocol.MethodJobStart.Name, jobP("j1", "ws", "a1"))
	send := protocol.SendParams{Base: protocol.Base{Target: agentT("ws", "a1", "j1")}, Text: "do it once", MsgID: "m1", Mode: protocol.ModeFollowUp}
	in := unknownEffect(t, j, p1, protocol.MethodChannelSend.Name, send)
	if in.Agent != "ws/a1" || in.Key != "m1" {
		t.Fatalf("intent %+v", in)
	}
	gone(t, p1)
	p2 := fake(t, state, nil)
	if rc := resolveFound[protocol.Receipt](t, j, p2, in); rc.State != protocol.ReceiptAccepted || rc.ID != "m1" {
		t.Fatalf("receipt %+v", rc)
	}
	if l := calls(p2, protocol.MethodChannelSend.Name); len(l) != 0 {
		t.Fatalf("the resolver sent again: %q", l)
	}
	if n := world(t, state).deliveries("ws/a1", "do it once"); n != 1 {
		t.Fatalf("delivered %d times, want once", n)
	}
	wantJournal(t, j, 0)
}

// A send that crashed before landing: the receipt is not-accepted, which
// does not resolve (the intent stays).
func TestSendCrashBeforeReceiptNotAccepted(t *testing.T) {
	state, j := t.TempDir(), openJ(t)
	p1 := fake(t, state, crash(protocol.MethodChannelSend.Name, "crash-before"))
	mustEffect(t, j, p1, protocol.MethodJobStart.Name, jobP("j1", "ws", "a1"))
	in := crashed(t, j, p1, protocol.MethodChannelSend.Name, protocol.SendParams{Base: protocol.Base{Target: agentT("ws", "a1", "j1")}, Text: "t", MsgID: "m1", Mode: protocol.ModeFollowUp})
	p2 := fake(t, state, nil)
	wantState(t, resolve(t, j, p2, in), Unresolved, ReasonNotAccepted)
	wantJournal(t, j, 1)
}

// Under another instance nothing is asked or resent: the new plugin's
// transcript holds the handshake only.
func TestInstanceChangedNothingSent(t *testing.T) {
	state, j := t.TempDir(), openJ(t)
	p1 := fake(t, state, crash(protocol.MethodHostAcquire.Name, "crash-after"))
	in := crashed(t, j, p1, protocol.MethodHostAcquire.Name, acquireP("k1"))
	p2 := fake(t, state, nil, "--instance", "other")
	out := resolve(t, j, p2, in)
	wantState(t, out, Unresolved, ReasonStopChanged)
	if !errors.Is(out.Err, caller.ErrInstanceChanged) || !errors.Is(out.Err, caller.ErrNotSent) {
		t.Fatalf("err %v", out.Err)
	}
	if m := outMethods(p2); len(m) != 1 || m[0] != protocol.MethodInitialize.Name {
		t.Fatalf("sent %v, want the handshake only", m)
	}
	wantJournal(t, j, 1)
}

// A repeat within the dedupe window returns the first result and makes no
// second effect: acquire, start and send, each twice.
func TestRepeatWithinWindowReturnsTheFirstResult(t *testing.T) {
	state, j := t.TempDir(), openJ(t)
	p := fake(t, state, nil)
	a1 := mustEffect(t, j, p, protocol.MethodHostAcquire.Name, acquireP("k1"))
	a2 := mustEffect(t, j, p, protocol.MethodHostAcquire.Name, acquireP("k1"))
	s1 := mustEffect(t, j, p, protocol.MethodJobStart.Name, jobP("j1", "ws", "a1"))
	s2 := mustEffect(t, j, p, protocol.MethodJobStart.Name, jobP("j1", "ws", "a1"))
	send := protocol.SendParams{Base: protocol.Base{Target: agentT("ws", "a1", "j1")}, Text: "once", MsgID: "m1", Mode: protocol.ModeFollowUp}
	d1 := mustEffect(t, j, p, protocol.MethodChannelSend.Name, send)
	d2 := mustEffect(t, j, p, protocol.MethodChannelSend.Name, send)
	for _, pair := range [][2]json.RawMessage{{a1, a2}, {s1, s2}, {d1, d2}} {
		if same, _ := caller.SameJSON(pair[0], pair[1]); !same {
			t.Fatalf("a repeat answered %s, the first %s", pair[1], pair[0])
		}
	}
	w := world(t, state)
	if len(w.Hosts) != 1 || len(w.Jobs) != 1 || w.deliveries("ws/a1", "once") != 1 {
		t.Fatalf("hosts %d, jobs %d, deliveries %d: a repeat made a second effect", len(w.Hosts), len(w.Jobs), w.deliveries("ws/a1", "once"))
	}
	wantJournal(t, j, 0)
}

// The journal on disk: one JSON file per intent, with the exact params.
func TestIntentOnDisk(t *testing.T) {
	state, j := t.TempDir(), openJ(t)
	p1 := fake(t, state, crash(protocol.MethodHostAcquire.Name, "crash-after"))
	in := unknownEffect(t, j, p1, protocol.MethodHostAcquire.Name, acquireP("k1"))
	b, err := os.ReadFile(j.path(in.ID))
	if err != nil {
		t.Fatal(err)
	}
	var disk Intent
	if err := json.Unmarshal(b, &disk); err != nil {
		t.Fatal(err)
	}
	if string(disk.Params) != string(in.Params) || disk.WriterPID != os.Getpid() || disk.SentBy < disk.WrittenAt {
		t.Fatalf("on disk: %+v", disk)
	}
	l := calls(p1, protocol.MethodHostAcquire.Name)
	if len(l) != 1 {
		t.Fatalf("sent %q", l)
	}
	sameButDeadline(t, l[0], in)
	// A second Effect of the same key sends nothing while it is unresolved.
	gone(t, p1)
	p2 := fake(t, state, nil)
	if _, _, err := j.Effect(waitfor.Context(t, time.Minute), p2.Plugin, protocol.MethodHostAcquire.Name, "", acquireP("k1")); !errors.Is(err, ErrUnresolved) || !errors.Is(err, caller.ErrNotSent) {
		t.Fatalf("Effect over an unresolved intent: %v", err)
	}
	if l := calls(p2, protocol.MethodHostAcquire.Name); len(l) != 0 {
		t.Fatalf("sent %q", l)
	}
}
