package replay

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// A reply that does not answer its request is an unknown outcome: the
// intent stays, and the resolver settles it (the fake's "reply" fault).

// An at-start kind's start answered without baseline: unknown, then found.
func TestStartReplyWithoutBaselineIsUnknown(t *testing.T) {
	state, j := t.TempDir(), openJ(t)
	bad := json.RawMessage(`{"view":{"command":"true","env":{}},"handle":"job-1"}`)
	p1 := fake(t, state, []map[string]any{{"method": protocol.MethodJobStart.Name, "fault": "reply", "result": bad}}, "--first-turn", "at-start")
	jp := jobP("j1", "ws", "a1")
	jp.Spec.FirstPrompt = &protocol.FirstPrompt{Text: "brief", MsgID: "m0"}
	_, in, err := j.Effect(waitfor.Context(t, time.Minute), p1.Plugin, protocol.MethodJobStart.Name, "", jp)
	var me *caller.MismatchError
	if !errors.As(err, &me) || me.Rule != caller.MismatchBaseline || in == nil {
		t.Fatalf("Effect: %v (intent %v), want a baseline mismatch and the intent kept", err, in)
	}
	if p1.Broken() != nil {
		t.Fatalf("a mismatch broke the plugin: %v", p1.Broken())
	}
	wantJournal(t, j, 1)
	// The same invocation's plugin (not crashed) resolves it: the lookup's
	// found carries the baseline.
	wantState(t, resolve(t, j, p1, in), Found, "")
	if n := world(t, state).deliveries("ws/a1", "brief"); n != 1 {
		t.Fatalf("the first prompt landed %d times", n)
	}
}

// A receipt for another msgId resolves nothing.
func TestReceiptForAnotherMsgIDResolvesNothing(t *testing.T) {
	state, j := t.TempDir(), openJ(t)
	p1 := fake(t, state, crash(protocol.MethodChannelSend.Name, "crash-after"))
	mustEffect(t, j, p1, protocol.MethodJobStart.Name, jobP("j1", "ws", "a1"))
	in := crashed(t, j, p1, protocol.MethodChannelSend.Name, protocol.SendParams{Base: protocol.Base{Target: agentT("ws", "a1", "j1")}, Text: "t", MsgID: "m1", Mode: protocol.ModeFollowUp})
	wrong := json.RawMessage(`{"state":"accepted","id":"m-other"}`)
	p2 := fake(t, state, []map[string]any{{"method": protocol.MethodChannelReceipt.Name, "fault": "reply", "result": wrong}})
	out := resolve(t, j, p2, in)
	wantState(t, out, Unresolved, ReasonCall)
	if !errors.Is(out.Err, caller.ErrMismatch) {
		t.Fatalf("err %v, want a mismatch", out.Err)
	}
	wantJournal(t, j, 1)
}
