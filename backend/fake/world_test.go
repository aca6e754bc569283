package fake

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func mkCall(t *testing.T, method string, params any) *protocol.Call {
	t.Helper()
	b, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	c := &protocol.Call{Method: method, Params: b}
	if err := json.Unmarshal(b, &c.Base); err != nil {
		t.Fatal(err)
	}
	return c
}

// The agent runs on the injected clock alone: with the clock still, a turn
// never settles; moved past --turn-ms, it has, whatever the wall time.
func TestSimulatedAgentIsDeterministicOnItsClock(t *testing.T) {
	clk := &clock{t: time.UnixMilli(1_000_000)}
	f, err := New(Config{Root: t.TempDir(), StateDir: t.TempDir(), TurnMs: 60_000, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tgt := protocol.Target{Host: protocol.HostRef{Name: "box"}, Agent: &protocol.AgentRef{Workstream: "ws", Name: "a"}}
	sp := protocol.JobSpec{Workstream: "ws", Name: "a", Role: "full-access", Cwd: ".", Env: map[string]string{}}
	if _, err := f.jobStart(ctx, mkCall(t, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: tgt}, Key: "j", Spec: sp})); err != nil {
		t.Fatal(err)
	}
	send := protocol.SendParams{Base: protocol.Base{Target: tgt, Deadline: 1}, Text: "hi", MsgID: "m1", Mode: protocol.ModeFollowUp}
	first, err := f.send(ctx, mkCall(t, protocol.MethodChannelSend, send))
	if err != nil {
		t.Fatal(err)
	}
	read := func() protocol.Reading {
		v, err := f.readStates(ctx, mkCall(t, protocol.MethodChannelReadStates, protocol.ReadStatesParams{Base: protocol.Base{Target: tgt}, Targets: []protocol.AgentName{{Workstream: "ws", Name: "a"}}}))
		if err != nil {
			t.Fatal(err)
		}
		return v.(map[string]protocol.Reading)["ws/a"]
	}
	time.Sleep(50 * time.Millisecond)
	if r := read(); r.State != protocol.TurnBusy || r.Since != 1_000_000 {
		t.Fatalf("with the clock still: %+v", r)
	}
	clk.t = clk.t.Add(59_999 * time.Millisecond)
	if r := read(); r.State != protocol.TurnBusy {
		t.Fatalf("1 ms before the settle: %+v", r)
	}
	clk.t = clk.t.Add(time.Millisecond)
	if r := read(); r.State != protocol.TurnIdle || r.Runs != 1 || r.Since != 1_060_000 {
		t.Fatalf("at the settle: %+v", r)
	}
	// A resend (a new deadline) returns the same bytes and starts no turn.
	send.Deadline = 2
	again, err := f.send(ctx, mkCall(t, protocol.MethodChannelSend, send))
	if err != nil || string(again.(json.RawMessage)) != string(first.(json.RawMessage)) {
		t.Fatalf("resend: %s %v, want %s", again, err, first)
	}
	if r := read(); r.State != protocol.TurnIdle || r.Runs != 1 {
		t.Fatalf("after the resend: %+v", r)
	}
}
