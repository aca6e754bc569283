package fake

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/outcap"
	"github.com/mu-org/mu-plugins/protocol"
)

func newAgent() *Agent {
	a := &Agent{TurnMs: 100, Deliveries: map[string]*Delivery{}}
	a.restart("inc-1", 0)
	return a
}

// last is the newest settled turn; the test fails without one.
func (a *Agent) last(t *testing.T) TurnRec {
	t.Helper()
	rec, _ := a.turn(a.Runs)
	if rec == nil {
		t.Fatalf("no settled turn (runs %d)", a.Runs)
	}
	return *rec
}

func TestAgentTurnsSettleInOrderAndRunsAreDense(t *testing.T) {
	a := newAgent()
	if b := a.deliver(Msg{ID: "m1", Text: "one"}, 0, false); b != 0 {
		t.Fatalf("first baseline = %d, want 0", b)
	}
	if b := a.deliver(Msg{ID: "m2", Text: "two"}, 10, false); b != 1 {
		t.Fatalf("queued baseline = %d, want 1 (the turn before it settles first)", b)
	}
	a.advance(99)
	if a.state() != protocol.TurnBusy || a.Runs != 0 {
		t.Fatalf("at 99 ms: %s runs=%d, want busy 0", a.state(), a.Runs)
	}
	a.advance(100)
	if last := a.last(t); a.Runs != 1 || a.state() != protocol.TurnBusy || last.Text != replyTo("one") {
		t.Fatalf("at 100 ms: runs=%d %s last=%+v", a.Runs, a.state(), last)
	}
	a.advance(1000)
	if last := a.last(t); a.Runs != 2 || a.state() != protocol.TurnIdle || last.Text != replyTo("two") || last.Since != 200 {
		t.Fatalf("at 1 s: runs=%d %s last=%+v", a.Runs, a.state(), last)
	}
	if first, _ := a.turn(1); first == nil || first.Text != replyTo("one") || first.Since != 100 {
		t.Fatalf("turn 1 is not kept: %+v", first)
	}
	o := a.observation()
	if !o.Settled || o.Runs != 2 || o.Incarnation != "inc-1" {
		t.Fatalf("observation %+v", o)
	}
}

func TestAgentBlocksUntilAnswered(t *testing.T) {
	a := newAgent()
	a.deliver(Msg{Text: "ask me [[block:question]]"}, 0, false)
	a.advance(5000)
	if a.state() != protocol.TurnBlocked || a.pending() != "question" || a.Runs != 0 {
		t.Fatalf("state %s pending %q runs %d, want blocked on question", a.state(), a.pending(), a.Runs)
	}
	a.Turn.Blocked, a.Turn.Answered, a.Turn.SettleAt = false, true, 5000+a.TurnMs
	a.advance(5100)
	if a.state() != protocol.TurnIdle || a.Runs != 1 {
		t.Fatalf("after the answer: %s runs=%d", a.state(), a.Runs)
	}
}

func TestAgentMarkersSteerCutAndRestart(t *testing.T) {
	a := newAgent()
	a.deliver(Msg{Text: "slow [[ms:1000]] [[error:boom]]"}, 0, false)
	if b := a.deliver(Msg{Text: "steer"}, 10, true); b != 0 {
		t.Fatalf("steer baseline = %d, want the turn in progress (0)", b)
	}
	a.advance(999)
	if a.Runs != 0 {
		t.Fatal("[[ms:1000]] was not honoured")
	}
	a.advance(1000)
	if e := a.last(t).Error; e != "boom" {
		t.Fatalf("lastError %q, want boom", e)
	}
	a.deliver(Msg{Text: "x"}, 2000, false)
	a.deliver(Msg{Text: "y"}, 2000, false)
	if !a.cut(2050, "aborted", true) || a.Runs != 2 || len(a.Queue) != 0 || a.Turn != nil {
		t.Fatalf("cut: runs=%d queue=%d turn=%v", a.Runs, len(a.Queue), a.Turn)
	}
	a.restart("inc-2", 3000)
	if a.Runs != 0 || a.Inc != "inc-2" || len(a.Turns) != 0 {
		t.Fatalf("restart kept state: %+v", a)
	}
}

func TestProjectedTranscriptHoldsFutureTurns(t *testing.T) {
	a := newAgent()
	a.deliver(Msg{Text: "hello"}, 0, false)
	ev := a.projected()
	if last := ev[len(ev)-1]; last.At != 100 || last.Text != replyTo("hello") {
		t.Fatalf("projected last event %+v", last)
	}
	if a.Runs != 0 || a.Turn == nil {
		t.Fatal("projecting changed the agent")
	}
}

// A message whose text escapes past a reply (300 KB of `<`, six bytes each
// in JSON) settles cut to fit, marked truncated; what the agent keeps stays
// bounded however many such turns settle.
func TestAgentKeepsTextsBounded(t *testing.T) {
	a := newAgent()
	big := strings.Repeat("<", 300<<10)
	for i := int64(0); i < 40; i++ {
		a.deliver(Msg{ID: fmt.Sprint(i), Text: big}, i*100, false)
		a.advance(i*100 + 100)
	}
	last := a.last(t)
	if !last.Cut || outcap.EscapedLen([]byte(last.Text)) > maxSettleText || !strings.HasPrefix(last.Text, replyTo("<<<")) {
		t.Fatalf("last turn: cut=%v, %d bytes escaped (cap %d)", last.Cut, outcap.EscapedLen([]byte(last.Text)), maxSettleText)
	}
	o := a.observation()
	b, _ := json.Marshal(o)
	if len(b) > maxSettleText+1024 || !o.LastTextTruncated {
		t.Fatalf("the observation is %d bytes (truncated %v)", len(b), o.LastTextTruncated)
	}
	w, _ := json.Marshal(a)
	if len(w) > 4<<20 {
		t.Fatalf("40 such turns make an agent of %d bytes of JSON", len(w))
	}
	if first, forgotten := a.turn(1); first == nil || forgotten || first.Text != "" || !first.Cut {
		t.Fatalf("an old turn past the text budget: %+v (forgotten %v), want kept, its text dropped", first, forgotten)
	}
}

// TestFencesBounded: an agent fences at most maxFences msgIds, and never
// drops one: past the bound a receipt cannot answer a final not-accepted,
// so it answers unreachable.
func TestFencesBounded(t *testing.T) {
	a := newAgent()
	for i := 0; i < maxFences; i++ {
		if !fence(a, fmt.Sprint("m", i), int64(i)) {
			t.Fatalf("fence %d of %d refused", i+1, maxFences)
		}
	}
	if fence(a, "one-more", 1) || len(a.NotAccepted) != maxFences || a.NotAccepted["m0"] == 0 {
		t.Fatalf("past the bound: %d fences held, m0 %d", len(a.NotAccepted), a.NotAccepted["m0"])
	}
	if r := fencesFull("one-more"); r.State != protocol.ReceiptUnreachable || r.ID != "one-more" || r.Reason == "" {
		t.Fatalf("the receipt past the bound: %+v", r)
	}
}
