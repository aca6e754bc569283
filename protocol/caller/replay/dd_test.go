package replay

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
)

// The branches the fake cannot show, against the dd plugin (real
// processes, a world in a file).

func ddState(t *testing.T) string { return filepath.Join(t.TempDir(), "world.json") }

// No lookup, exact dedupe: the identical params again return the first
// result, and the effect landed once.
func TestDedupeResendAfterCrashAfter(t *testing.T) {
	state, j := ddState(t), openJ(t)
	p1 := dd(t, "dedupe", state, "after")
	in := crashed(t, j, p1, protocol.MethodHostAcquire.Name, acquireP("k1"))
	first := ddRead(t, state).Hosts["k1"]
	p2 := dd(t, "dedupe", state, "")
	if r := resolveFound[protocol.AcquireResult](t, j, p2, in); r.Handle != first {
		t.Fatalf("resend answered %+v, the first landed %q", r, first)
	}
	l := calls(p2, protocol.MethodHostAcquire.Name)
	if len(l) != 1 {
		t.Fatalf("acquires sent: %q", l)
	}
	sameButDeadline(t, l[0], in)
	if w := ddRead(t, state); w.Effects != 1 {
		t.Fatalf("%d effects landed, want 1", w.Effects)
	}
	wantJournal(t, j, 0)
}

// Crashed before landing: the deduped repeat makes it, once.
func TestDedupeResendAfterCrashBefore(t *testing.T) {
	state, j := ddState(t), openJ(t)
	in, p2 := ddCrashed(t, j, state, "dedupe", "before", protocol.MethodJobStart.Name, jobP("j1", "ws", "a1"))
	wantState(t, resolve(t, j, p2, in), Found, "")
	if w := ddRead(t, state); w.Effects != 1 || w.Jobs["j1"] == "" {
		t.Fatalf("world %+v, want job j1 started once", w)
	}
}

// A repeat that would land outside the dedupe window is not sent.
func TestDedupeWindowPassed(t *testing.T) {
	state, j := ddState(t), openJ(t)
	in, p2 := ddCrashed(t, j, state, "dedupe", "before", protocol.MethodHostAcquire.Name, acquireP("k1"))
	j.Now = func() time.Time { return time.Now().Add(11 * time.Minute) } // the window is 10 minutes
	wantState(t, resolve(t, j, p2, in), Unresolved, ReasonWindowPassed)
	if l := calls(p2, protocol.MethodHostAcquire.Name); len(l) != 0 {
		t.Fatalf("sent outside the window: %q", l)
	}
	wantJournal(t, j, 1)
}

// receipt none, dedupe exact: a delivery is resent (deduped, landing once)
// while it is the agent's newest.
func TestDeliveryDedupedResend(t *testing.T) {
	state, j := ddState(t), openJ(t)
	send := protocol.SendParams{Base: protocol.Base{Target: agentT("ws", "a1", "j1")}, Text: "x", MsgID: "m1", Mode: protocol.ModeFollowUp}
	in, p2 := ddCrashed(t, j, state, "dedupe", "after", protocol.MethodChannelSend.Name, send)
	wantState(t, resolve(t, j, p2, in), Found, "")
	if l := calls(p2, protocol.MethodChannelReceipt.Name); len(l) != 0 {
		t.Fatalf("asked a receipt of a receipt-none channel: %q", l)
	}
	if l := calls(p2, protocol.MethodChannelSend.Name); len(l) != 1 {
		t.Fatalf("sends: %q", l)
	} else {
		sameButDeadline(t, l[0], in)
	}
	if w := ddRead(t, state); w.Deliveries["m1"] != 1 || w.Effects != 1 {
		t.Fatalf("world %+v, want m1 delivered once", w)
	}
}

// Once a newer delivery to the agent was written, the older one is not
// resent.
func TestDeliveryNewerWrittenNoResend(t *testing.T) {
	state, j := ddState(t), openJ(t)
	mk := func(id string) protocol.SendParams {
		return protocol.SendParams{Base: protocol.Base{Target: agentT("ws", "a1", "j1")}, Text: id, MsgID: id, Mode: protocol.ModeFollowUp}
	}
	in, p2 := ddCrashed(t, j, state, "dedupe", "before", protocol.MethodChannelSend.Name, mk("m1"))
	mustEffect(t, j, p2, protocol.MethodChannelSend.Name, mk("m2"))
	wantState(t, resolve(t, j, p2, in), Unresolved, ReasonNewerDelivery)
	if l := calls(p2, protocol.MethodChannelSend.Name); len(l) != 1 || !strings.Contains(l[0], `"m2"`) {
		t.Fatalf("sends: %q, want m2's only", l)
	}
	if w := ddRead(t, state); w.Deliveries["m1"] != 0 {
		t.Fatalf("m1 was delivered: %+v", w)
	}
}

// A handle "file" kind never acts on none, fenced or not.
func TestFileKindNeverActsOnNone(t *testing.T) {
	state, j := ddState(t), openJ(t)
	in, p2 := ddCrashed(t, j, state, "unfenced", "before", protocol.MethodJobStart.Name, jobP("j1", "ws", "a1"))
	wantState(t, resolve(t, j, p2, in), Unresolved, ReasonFileHandle)
	if l := calls(p2, protocol.MethodJobLookup.Name); len(l) != 1 || !strings.Contains(l[0], `"fence":true`) {
		t.Fatalf("lookups: %q", l)
	}
	wantJournal(t, j, 1)
}

// An unfenced none counts only once inFlightMs has passed since the
// latest moment the plugin could have acted (the send's deadline plus one
// grace).
func TestUnfencedNoneWaitsOutInFlight(t *testing.T) {
	state, j := ddState(t), openJ(t)
	in, p2 := ddCrashed(t, j, state, "unfenced", "before", protocol.MethodHostAcquire.Name, acquireP("k1"))
	j.Now = func() time.Time { return time.UnixMilli(in.SentBy) }
	wantState(t, resolve(t, j, p2, in), Unresolved, ReasonInFlight)
	if l := calls(p2, protocol.MethodHostLookup.Name); len(l) != 1 || !strings.Contains(l[0], `"fence":false`) {
		t.Fatalf("lookups: %q", l)
	}
	// inFlightMs is 1 s: not yet at SentBy + grace + 999 ms, done at + 1000 ms.
	j.Now = func() time.Time { return time.UnixMilli(in.SentBy).Add(protocol.Grace + 999*time.Millisecond) }
	wantState(t, resolve(t, j, p2, in), Unresolved, ReasonInFlight)
	j.Now = func() time.Time { return time.UnixMilli(in.SentBy).Add(protocol.Grace + time.Second) }
	wantState(t, resolve(t, j, p2, in), None, ReasonInFlightSpent)
	wantJournal(t, j, 0)
}

// Resolve reads its intent from the journal: one already settled is
// ErrNoIntent, and nothing is sent.
func TestResolveSettledIntent(t *testing.T) {
	state, j := ddState(t), openJ(t)
	in, p2 := ddCrashed(t, j, state, "dedupe", "after", protocol.MethodHostAcquire.Name, acquireP("k1"))
	wantState(t, resolve(t, j, p2, in), Found, "")
	if err := j.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Resolve(waitfor.Context(t, time.Minute), p2.Plugin, in); !errors.Is(err, ErrNoIntent) {
		t.Fatalf("a settled intent resolved again: %v", err)
	}
	if l := calls(p2, protocol.MethodHostAcquire.Name); len(l) != 1 {
		t.Fatalf("acquires: %q", l)
	}
}
