package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

type agentEnv struct {
	p     *drive.Plugin
	t     protocol.Target
	start protocol.JobStartResult
}

func startJob(t *testing.T, p *drive.Plugin, key, name string, sp protocol.JobSpec) agentEnv {
	t.Helper()
	r := drive.Call(t, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: drive.HostTarget("box")}, Key: key, Spec: sp})
	if r.Handle == "" || r.View.Command == "" || r.View.Env == nil || r.Baseline == nil || r.Baseline.Runs != 0 {
		t.Fatalf("job.start: %s", words.JSON(r))
	}
	return agentEnv{p: p, t: agentTarget("box", "ws", name, key, r.Handle), start: r}
}

func (a agentEnv) send(t *testing.T, text, msgID string) protocol.SendResult {
	t.Helper()
	return drive.Call(t, a.p, protocol.MethodChannelSend, a.sendP(text, msgID))
}

func (a agentEnv) sendP(text, msgID string) protocol.SendParams {
	return protocol.SendParams{Base: protocol.Base{Target: a.t}, Text: text, MsgID: msgID, Mode: protocol.ModeFollowUp}
}

func (a agentEnv) reading(t *testing.T) protocol.Reading {
	t.Helper()
	m := drive.Call(t, a.p, protocol.MethodChannelReadStates, protocol.ReadStatesParams{
		Base: protocol.Base{Target: a.t}, Targets: []protocol.AgentName{{Workstream: a.t.Agent.Workstream, Name: a.t.Agent.Name}}})
	r, ok := m[a.t.Agent.Key()]
	if !ok {
		t.Fatalf("readStates has no reading for %s: %s", a.t.Agent.Key(), words.JSON(m))
	}
	return r
}

func (a agentEnv) watch(t *testing.T, after *int64) caller.Notification {
	t.Helper()
	return a.watchP(t, protocol.WatchParams{Base: protocol.Base{Target: a.t}, AfterRuns: after})
}

// watchInc watches from afterRuns after on incarnation inc ("" for none).
func (a agentEnv) watchInc(t *testing.T, after int64, inc string) caller.Notification {
	t.Helper()
	return a.watchP(t, protocol.WatchParams{Base: protocol.Base{Target: a.t}, AfterRuns: &after, Inc: inc})
}

// watchP runs channel.watch and waits for its one notification.
func (a agentEnv) watchP(t *testing.T, params protocol.WatchParams) caller.Notification {
	t.Helper()
	w, err := a.p.Watch(waitfor.Context(t, time.Minute), params, 0)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	n, err := w.Wait(waitfor.Context(t, time.Minute))
	if err != nil {
		t.Fatalf("watch wait: %v\n%s", err, a.p.Explain())
	}
	return n
}

func TestJobLifecycle(t *testing.T) {
	p := start(t, "--turn-ms", "50")
	a := startJob(t, p, "j1", "a1", spec("ws", "a1"))
	again := drive.Call(t, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: drive.HostTarget("box")}, Key: "j1", Spec: spec("ws", "a1")})
	if words.JSON(again) != words.JSON(a.start) {
		t.Fatalf("a deduped start: %s, want %s", words.JSON(again), words.JSON(a.start))
	}
	other := spec("ws", "a1")
	other.Cmd = "something else"
	if re := drive.Err(t, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: drive.HostTarget("box")}, Key: "j1", Spec: other}); re == nil || re.Kind != protocol.Permanent {
		t.Fatalf("the key with another spec: %v", re)
	}
	l := drive.Call(t, p, protocol.MethodJobLookup, protocol.LookupParams{Base: protocol.Base{Target: drive.HostTarget("box")}, Key: "j1", Fence: true})
	if l.Found == nil || l.Found.Handle != a.start.Handle || l.Found.View == nil || l.Found.View.Command != a.start.View.Command {
		t.Fatalf("lookup: %s", words.JSON(l))
	}
	if l := drive.Call(t, p, protocol.MethodJobLookup, protocol.LookupParams{Base: protocol.Base{Target: drive.HostTarget("box")}, Key: "nope", Fence: true}); !l.None {
		t.Fatalf("lookup of an unknown key: %s", words.JSON(l))
	}
	if s := drive.Call(t, p, protocol.MethodJobStatus, protocol.Base{Target: a.t}); s.State != protocol.JobRunning {
		t.Fatalf("status: %s", words.JSON(s))
	}
	v := drive.Call(t, p, protocol.MethodJobAttach, protocol.Base{Target: a.t})
	if v.Command != a.start.View.Command {
		t.Fatalf("attach: %s", words.JSON(v))
	}
	bad := spec("ws", "a2")
	bad.Role = "god-mode"
	if re := drive.Err(t, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: drive.HostTarget("box")}, Key: "j2", Spec: bad}); re == nil {
		t.Fatal("a role the fake does not honour was started")
	}
	for i := 0; i < 2; i++ {
		drive.Call(t, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: a.t}, Key: "j1"})
	}
	if s := drive.Call(t, p, protocol.MethodJobStatus, protocol.Base{Target: a.t}); s.State != protocol.JobEnded || s.Exit == nil {
		t.Fatalf("status after stop: %s", words.JSON(s))
	}
	if re := drive.Err(t, p, protocol.MethodChannelSend, a.sendP("late", "m-late")); re == nil {
		t.Fatal("a send to a stopped job was accepted")
	}
}

func TestChannelSendWatchReceiptDedupe(t *testing.T) {
	p := start(t, "--turn-ms", "100")
	a := startJob(t, p, "j1", "a1", spec("ws", "a1"))
	base := drive.Call(t, p, protocol.MethodChannelBaseline, protocol.Base{Target: a.t})
	if base == nil || base.Runs != 0 || base.Incarnation != a.start.Baseline.Incarnation {
		t.Fatalf("baseline: %s", words.JSON(base))
	}
	r := a.send(t, "hello", "m1")
	if r.Channel != "fake" || r.Ack != protocol.AckConfirmed || r.MsgID != "m1" || r.Baseline == nil || *r.Baseline != 0 {
		t.Fatalf("send: %s", words.JSON(r))
	}
	// The resend: the same params but the deadline.
	if again := a.send(t, "hello", "m1"); words.JSON(again) != words.JSON(r) {
		t.Fatalf("a resend answered %s, want %s", words.JSON(again), words.JSON(r))
	}
	if re := drive.Err(t, p, protocol.MethodChannelSend, a.sendP("other text", "m1")); re == nil || re.Kind != protocol.Permanent {
		t.Fatalf("msgId reused with other params: %v", re)
	}
	zero := int64(0)
	n := a.watch(t, &zero)
	if n.Settled == nil || n.Settled.Observation.Runs != 1 || n.Settled.Observation.LastText != "fake: done: hello" || !n.Settled.Observation.Settled {
		t.Fatalf("notification: %s", n.Params)
	}
	// Exactly one notification, after its reply, on the wire.
	if n := strings.Count(strings.Join(p.Wire.Lines(caller.In), "\n"), "watch/settled"); n != 1 {
		t.Fatalf("want exactly one watch/settled, got %d:\n%s", n, p.Explain())
	}
	if s := a.reading(t); s.State != protocol.TurnIdle || s.Runs != 1 {
		t.Fatalf("after one turn (the resend made none): %s", words.JSON(s))
	}
	rc := drive.Call(t, p, protocol.MethodChannelReceipt, protocol.ReceiptParams{Base: protocol.Base{Target: a.t}, MsgID: "m1"})
	if rc.State != protocol.ReceiptAccepted || rc.ID != "m1" || rc.Runs == nil || *rc.Runs != 0 || rc.Incarnation == "" {
		t.Fatalf("receipt: %s", words.JSON(rc))
	}
	if rc := drive.Call(t, p, protocol.MethodChannelReceipt, protocol.ReceiptParams{Base: protocol.Base{Target: a.t}, MsgID: "m-none"}); rc.State != protocol.ReceiptNotAccepted || rc.ID != "m-none" {
		t.Fatalf("receipt of an unknown msgId: %s", words.JSON(rc))
	}
	lr := drive.Call(t, p, protocol.MethodChannelLastRun, protocol.LastRunParams{Base: protocol.Base{Target: a.t}, AfterRuns: 0})
	if lr == nil || lr.Runs != 1 {
		t.Fatalf("lastRun: %s", words.JSON(lr))
	}
	if lr := drive.Call(t, p, protocol.MethodChannelLastRun, protocol.LastRunParams{Base: protocol.Base{Target: a.t}, AfterRuns: 1}); lr != nil {
		t.Fatalf("lastRun past the last: %s", words.JSON(lr))
	}
	// Two queued sends: baselines count the turns before each; runs stay dense.
	r2, r3 := a.send(t, "two [[ms:300]]", "m2"), a.send(t, "three", "m3")
	if *r2.Baseline != 1 || *r3.Baseline != 2 {
		t.Fatalf("baselines %d %d, want 1 2", *r2.Baseline, *r3.Baseline)
	}
	two := int64(2)
	if n := a.watch(t, &two); n.Settled == nil || n.Settled.Observation.Runs != 3 || n.Settled.Observation.LastText != "fake: done: three" {
		t.Fatalf("after three: %s", n.Params)
	}
}

func TestChannelBlockAnswerSteerCommandInterruptAbortFresh(t *testing.T) {
	p := start(t, "--turn-ms", "50")
	a := startJob(t, p, "j1", "a1", spec("ws", "a1"))
	a.send(t, "may I? [[block:question]]", "m1")
	var rd protocol.Reading
	waitfor.Poll(waitfor.Patience, func() bool { rd = a.reading(t); return rd.State == protocol.TurnBlocked })
	if rd.State != protocol.TurnBlocked || rd.Pending != "question" {
		t.Fatalf("want blocked on question: %s", words.JSON(rd))
	}
	if re := drive.Err(t, p, protocol.MethodChannelSend, a.sendP("hi", "m2")); re == nil {
		t.Fatal("a send without force to a blocked agent was accepted")
	}
	ans := drive.Call(t, p, protocol.MethodChannelAnswer, protocol.AnswerParams{Base: protocol.Base{Target: a.t}, Keys: []string{"y"}})
	if ans.Ack != protocol.AckConfirmed || len(ans.Keys) != 1 {
		t.Fatalf("answer: %s", words.JSON(ans))
	}
	zero := int64(0)
	if n := a.watch(t, &zero); n.Settled == nil || n.Settled.Observation.Runs != 1 {
		t.Fatalf("after the answer: %s", n.Params)
	}

	long := a.send(t, "long [[ms:600000]]", "m3")
	st := drive.Call(t, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: a.t}, Text: "steer", MsgID: "m4", Mode: protocol.ModeSteer})
	if *st.Baseline != *long.Baseline {
		t.Fatalf("a steer's baseline %d, want the turn in progress %d", *st.Baseline, *long.Baseline)
	}
	ir := drive.Call(t, p, protocol.MethodChannelInterrupt, protocol.InterruptParams{Base: protocol.Base{Target: a.t}, Text: "stop that [[ms:600000]]", MsgID: "m5", TimeoutMs: 1000})
	if !ir.WasBusy || ir.Runs == nil || *ir.Runs != 2 || ir.MsgID != "m5" {
		t.Fatalf("interrupt: %s", words.JSON(ir))
	}
	cm := drive.Call(t, p, protocol.MethodChannelCommand, protocol.CommandParams{Base: protocol.Base{Target: a.t}, Name: "compact"})
	if cm.Ack != protocol.AckConfirmed || *cm.Baseline != 3 {
		t.Fatalf("command queued after the interrupt's turn: %s", words.JSON(cm))
	}
	ab := drive.Call(t, p, protocol.MethodChannelAbort, protocol.AbortParams{Base: protocol.Base{Target: a.t}, TimeoutMs: 1000})
	if ab.Before != protocol.TurnBusy || ab.After != protocol.TurnIdle || !ab.Aborted || !ab.Settled {
		t.Fatalf("abort: %s", words.JSON(ab))
	}
	if rd := a.reading(t); rd.State != protocol.TurnIdle || rd.Runs != 3 {
		t.Fatalf("after abort (the queue dropped): %s", words.JSON(rd))
	}

	// fresh restarts the session: a new incarnation, runs from 0, and a
	// watch open across it ends with watch/restarted.
	w, err := p.Watch(waitfor.Context(t, time.Minute), protocol.WatchParams{Base: protocol.Base{Target: a.t}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	fr := drive.Call(t, p, protocol.MethodChannelFresh, protocol.FreshParams{Base: protocol.Base{Target: a.t}, Text: "again", MsgID: "m6"})
	if *fr.Baseline != 0 {
		t.Fatalf("fresh baseline %d", *fr.Baseline)
	}
	n, err := w.Wait(waitfor.Context(t, time.Minute))
	if err != nil || n.Restarted == nil || n.Restarted.Incarnation == a.start.Baseline.Incarnation {
		t.Fatalf("watch across fresh: %v %s", err, n.Params)
	}
	if re := drive.Err(t, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: a.t}, Text: "x", MsgID: "m7", Mode: protocol.ModeFollowUp, ExpectIncarnation: a.start.Baseline.Incarnation}); re == nil {
		t.Fatal("a send expecting the old incarnation was accepted")
	}
}

func TestAtStartFirstPrompt(t *testing.T) {
	p := start(t, "--turn-ms", "50", "--first-turn", "at-start")
	if p.Declaration().Seams.Job.FirstTurn != protocol.FirstTurnAtStart {
		t.Fatal("--first-turn at-start not declared")
	}
	sp := spec("ws", "a1")
	sp.FirstPrompt = &protocol.FirstPrompt{Text: "brief", MsgID: "first"}
	a := startJob(t, p, "j1", "a1", sp)
	zero := int64(0)
	if n := a.watch(t, &zero); n.Settled == nil || n.Settled.Observation.LastText != "fake: done: brief" {
		t.Fatalf("the first prompt's turn: %s", n.Params)
	}
	rc := drive.Call(t, p, protocol.MethodChannelReceipt, protocol.ReceiptParams{Base: protocol.Base{Target: a.t}, MsgID: "first"})
	if rc.State != protocol.ReceiptAccepted || *rc.Runs != 0 {
		t.Fatalf("the first prompt's receipt: %s", words.JSON(rc))
	}
	if re := drive.Err(t, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: drive.HostTarget("box")}, Key: "j2", Spec: spec("ws", "a2")}); re == nil {
		t.Fatal("an at-start start without a first prompt was accepted")
	}
}

func (a agentEnv) lastRun(t *testing.T, after int64, inc string) *protocol.Observation {
	t.Helper()
	return drive.Call(t, a.p, protocol.MethodChannelLastRun, protocol.LastRunParams{Base: protocol.Base{Target: a.t}, AfterRuns: after, Inc: inc})
}

// With three turns settled past afterRuns, lastRun and watch answer turn
// afterRuns+1 (the one a delivery with that baseline started), of the asked
// incarnation only: another one's lastRun is null and its watch restarted.
func TestLastRunAndWatchAnswerTheTurnPastAfterRuns(t *testing.T) {
	p := start(t, "--turn-ms", "20")
	a := startJob(t, p, "j1", "a1", spec("ws", "a1"))
	inc := a.start.Baseline.Incarnation
	for i, text := range []string{"one", "two", "three"} {
		a.send(t, text, "m-"+text)
		if n := a.watchInc(t, int64(i), ""); n.Settled == nil || n.Settled.Observation.Runs != int64(i+1) {
			t.Fatalf("turn %d: %s", i+1, n.Params)
		}
	}
	for after, text := range []string{"one", "two", "three"} {
		o := a.lastRun(t, int64(after), "")
		if o == nil || o.Runs != int64(after+1) || o.LastText != "fake: done: "+text || o.Incarnation != inc || !o.Settled {
			t.Fatalf("lastRun afterRuns %d: %s, want turn %d (%s)", after, words.JSON(o), after+1, text)
		}
		if o := a.lastRun(t, int64(after), inc); o == nil || o.Runs != int64(after+1) {
			t.Fatalf("lastRun afterRuns %d inc %s: %s", after, inc, words.JSON(o))
		}
		n := a.watchInc(t, int64(after), "")
		if n.Settled == nil || n.Settled.Observation.Runs != int64(after+1) || n.Settled.Observation.LastText != "fake: done: "+text {
			t.Fatalf("watch afterRuns %d: %s, want turn %d at once", after, n.Params, after+1)
		}
	}
	if o := a.lastRun(t, 3, ""); o != nil {
		t.Fatalf("lastRun past the last settled turn: %s", words.JSON(o))
	}
	if o := a.lastRun(t, 0, "inc-999"); o != nil {
		t.Fatalf("lastRun of an incarnation the fake never had: %s", words.JSON(o))
	}
	if n := a.watchInc(t, 0, "inc-999"); n.Restarted == nil || n.Restarted.Incarnation != inc {
		t.Fatalf("watch on an incarnation the fake never had: %s, want watch/restarted to %s", n.Params, inc)
	}
	// After a fresh, the old incarnation is another one.
	drive.Call(t, p, protocol.MethodChannelFresh, protocol.FreshParams{Base: protocol.Base{Target: a.t}, Text: "again", MsgID: "m-fresh"})
	if o := a.lastRun(t, 0, inc); o != nil {
		t.Fatalf("lastRun of the incarnation before a fresh: %s", words.JSON(o))
	}
	if n := a.watchInc(t, 0, inc); n.Restarted == nil || n.Restarted.Incarnation == inc {
		t.Fatalf("watch on the incarnation before a fresh: %s", n.Params)
	}
}

// A turn whose text escapes past the 1 MiB line (300 KB of `<`, sent as
// mu sends it, unescaped, and six bytes each once encoding/json escapes the
// reply) settles with its text cut to fit and lastTextTruncated; its watch
// notification arrives, and later reads and turns still work.
func TestOversizeTurnTextIsCutToFit(t *testing.T) {
	p := start(t, "--turn-ms", "20")
	a := startJob(t, p, "j1", "a1", spec("ws", "a1"))
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(a.sendP(strings.Repeat("<", 300<<10), "m-big")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Call(waitfor.Context(t, time.Minute), protocol.MethodChannelSend.Name, json.RawMessage(raw.Bytes()), 0); err != nil {
		t.Fatalf("send: %v", err)
	}
	n := a.watchInc(t, 0, "")
	if n.Settled == nil || !n.Settled.Observation.LastTextTruncated || !strings.HasPrefix(n.Settled.Observation.LastText, "fake: done: <<<") {
		t.Fatalf("the big turn's notification: %.200s", n.Params)
	}
	if o := a.lastRun(t, 0, ""); o == nil || !o.LastTextTruncated || o.Runs != 1 {
		t.Fatalf("lastRun of the big turn: %.200s", words.JSON(o))
	}
	a.send(t, "small", "m-small")
	if n := a.watchInc(t, 1, ""); n.Settled == nil || n.Settled.Observation.LastText != "fake: done: small" || n.Settled.Observation.LastTextTruncated {
		t.Fatalf("the turn after: %.200s", n.Params)
	}
}

// An env name that is not a shell variable name (`=`, a newline) or a
// value holding NUL is refused, as mu-plugin-docker refuses it
// (protocol.CheckEnv), and no job is recorded.
func TestJobStartRefusesEnvNoProcessCanCarry(t *testing.T) {
	p := start(t)
	for i, env := range []map[string]string{{"A=B": "x"}, {"A\nB": "x"}, {"": "x"}, {"A": "nul\x00"}} {
		sp := spec("ws", "a1")
		sp.Env = env
		key := fmt.Sprint("j", i)
		if re := drive.Err(t, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: drive.HostTarget("box")}, Key: key, Spec: sp}); re == nil || re.Kind != protocol.Permanent {
			t.Errorf("env %q: %v, want a permanent refusal", env, re)
		}
		if l := drive.Call(t, p, protocol.MethodJobLookup, protocol.LookupParams{Base: protocol.Base{Target: drive.HostTarget("box")}, Key: key}); !l.None {
			t.Errorf("env %q: a refused start was recorded: %s", env, words.JSON(l))
		}
	}
}

// TestReceiptNotAcceptedIsFinal: once channel.receipt answered not-accepted
// for a msgId, no delivery of it is ever taken (docs/protocol.md): a send,
// fresh or interrupt with it is refused permanent and makes no turn, and its
// receipt stays not-accepted, across invocations of a persisted world too.
func TestReceiptNotAcceptedIsFinal(t *testing.T) {
	state := t.TempDir()
	p := start(t, "--turn-ms", "50", "--state", state)
	a := startJob(t, p, "j1", "a1", spec("ws", "a1"))
	receipt := func(p *drive.Plugin, id string) protocol.Receipt {
		t.Helper()
		return drive.Call(t, p, protocol.MethodChannelReceipt, protocol.ReceiptParams{Base: protocol.Base{Target: a.t}, MsgID: id})
	}
	b := protocol.Base{Target: a.t}
	late := []struct {
		method, id string
		send       func() *caller.RemoteError
	}{
		{protocol.MethodChannelSend.Name, "m-send", func() *caller.RemoteError {
			return drive.Err(t, p, protocol.MethodChannelSend, a.sendP("late", "m-send"))
		}},
		{protocol.MethodChannelFresh.Name, "m-fresh", func() *caller.RemoteError {
			return drive.Err(t, p, protocol.MethodChannelFresh, protocol.FreshParams{Base: b, Text: "late", MsgID: "m-fresh"})
		}},
		{protocol.MethodChannelInterrupt.Name, "m-interrupt", func() *caller.RemoteError {
			return drive.Err(t, p, protocol.MethodChannelInterrupt, protocol.InterruptParams{Base: b, Text: "late", MsgID: "m-interrupt", TimeoutMs: 1000})
		}},
	}
	for _, c := range late {
		method, id := c.method, c.id
		if rc := receipt(p, id); rc.State != protocol.ReceiptNotAccepted || rc.ID != id {
			t.Fatalf("receipt of %s before any delivery: %s", id, words.JSON(rc))
		}
		if re := c.send(); re == nil || re.Kind != protocol.Permanent {
			t.Errorf("%s of msgId %s after its receipt answered not-accepted: %v, want refused permanent", method, id, re)
		}
		if rc := receipt(p, id); rc.State != protocol.ReceiptNotAccepted {
			t.Errorf("receipt of %s after the late %s: %s, want not-accepted still", id, method, words.JSON(rc))
		}
	}
	if rd := a.reading(t); rd.State != protocol.TurnIdle || rd.Runs != 0 {
		t.Errorf("a refused late delivery made a turn: %s", words.JSON(rd))
	}
	// The fence is in the world: another invocation refuses it too.
	p.Stop()
	q := start(t, "--turn-ms", "50", "--state", state)
	if re := drive.Err(t, q, protocol.MethodChannelSend, a.sendP("late", "m-send")); re == nil || re.Kind != protocol.Permanent {
		t.Errorf("another invocation took a fenced msgId: %v", re)
	}
	// A msgId never asked about is still delivered.
	if r := drive.Call(t, q, protocol.MethodChannelSend, a.sendP("on time", "m-ok")); r.MsgID != "m-ok" {
		t.Errorf("send: %s", words.JSON(r))
	}
	if rc := receipt(q, "m-ok"); rc.State != protocol.ReceiptAccepted {
		t.Errorf("receipt of a delivered msgId: %s", words.JSON(rc))
	}
}
