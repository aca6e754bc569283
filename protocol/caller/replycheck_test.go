package caller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/protocol"
)

// The "wrong" plugin is a real protocol.Serve plugin (this test binary,
// re-exec'd) whose every answer passes the schema but may not answer its
// request: which way is chosen by the request itself (the spec's name, the
// key, the msgId, the asked agent). Its job kind is a reply kind with
// firstTurn at-start.
func init() { extraPlugins["wrong"] = runWrongPlugin }

func wrongSeams() protocol.Seams {
	s := testSeams()
	s.Job.Handle = protocol.HandleReply
	s.Job.FirstTurn = protocol.FirstTurnAtStart
	s.Host = &protocol.HostSeam{Acquire: protocol.KeyCaps{Lookup: true}}
	return s
}

func runWrongPlugin(name string) int {
	view := protocol.View{Command: "true", Env: map[string]string{}}
	base0 := &protocol.Baseline{Runs: 0, Incarnation: "i1"}
	start := func(how string) protocol.JobStartResult {
		r := protocol.JobStartResult{View: view, Handle: "h1", Baseline: base0}
		switch how {
		case "no-handle":
			r.Handle = ""
		case "no-view":
			r.View.Command = ""
		case "no-baseline":
			r.Baseline = nil
		case "runs-1":
			r.Baseline = &protocol.Baseline{Runs: 1}
		}
		return r
	}
	h := map[string]protocol.Handler{
		protocol.MethodJobStart.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			var p protocol.JobStartParams
			if err := call.Decode(&p); err != nil {
				return nil, err
			}
			return start(p.Spec.Name), nil
		},
		protocol.MethodJobLookup.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			var p protocol.LookupParams
			if err := call.Decode(&p); err != nil {
				return nil, err
			}
			r := start(p.Key)
			f := &protocol.JobFound{Handle: r.Handle, Baseline: r.Baseline}
			if p.Key != "no-view" {
				f.View = &r.View
			}
			if f.Handle == "" {
				f.Handle = "h1"
			}
			return protocol.JobLookupResult{Found: f}, nil
		},
		protocol.MethodChannelReceipt.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			var p protocol.ReceiptParams
			if err := call.Decode(&p); err != nil {
				return nil, err
			}
			id := p.MsgID
			if id == "wrong" {
				id = "another"
			}
			return protocol.Receipt{State: protocol.ReceiptAccepted, ID: id}, nil
		},
		protocol.MethodChannelReadStates.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			var p protocol.ReadStatesParams
			if err := call.Decode(&p); err != nil {
				return nil, err
			}
			r := protocol.Reading{State: protocol.TurnIdle, Since: 1, Runs: 3, Incarnation: "i1"}
			out := map[string]protocol.Reading{"ws/other": r}
			for _, t := range p.Targets {
				if t.Name != "missing" {
					out[t.Workstream+"/"+t.Name] = r
				}
			}
			return out, nil
		},
		protocol.MethodChannelSend.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			var p protocol.SendParams
			if err := call.Decode(&p); err != nil {
				return nil, err
			}
			r := protocol.SendResult{Channel: "tchan", Ack: protocol.AckConfirmed, MsgID: p.MsgID}
			switch p.MsgID {
			case "wrong-channel":
				r.Channel = "elsewhere"
			case "wrong-id":
				r.MsgID = "m-other"
			}
			return r, nil
		},
		protocol.MethodHostAcquire.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			return protocol.AcquireResult{Handle: "host-1"}, nil
		},
	}
	err := protocol.Serve(context.Background(), protocol.Options{
		Name: name, Version: "0.1.0", Instance: "test", Seams: wrongSeams(), Handlers: h,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func wrongPlugin(t *testing.T) (*Plugin, *harness) {
	h := newHarness(t, "wrong", "wrong")
	return h.start(t), h
}

// wantMismatch: the error is an unknown outcome/answer (ErrUnanswered,
// ErrMismatch) about rule, not a broken plugin, and the plugin still runs.
func wantMismatch(t *testing.T, p *Plugin, err error, rule string) {
	t.Helper()
	var me *MismatchError
	if !errors.As(err, &me) || me.Rule != rule {
		t.Fatalf("err = %v, want a *MismatchError about %s", err, rule)
	}
	if !errors.Is(err, ErrUnanswered) || !errors.Is(err, ErrMismatch) {
		t.Fatalf("%v does not match ErrUnanswered and ErrMismatch", err)
	}
	if errors.Is(err, ErrInvalidReply) || errors.Is(err, ErrBroken) || p.Broken() != nil {
		t.Fatalf("a mismatch broke the plugin: %v / %v", err, p.Broken())
	}
}

func TestReplyCheckJobStart(t *testing.T) {
	p, _ := wrongPlugin(t)
	ctx := context.Background()
	sp := func(how string) protocol.JobStartParams {
		return protocol.JobStartParams{Base: protocol.Base{Target: tgt}, Key: "k-" + how, Spec: protocol.JobSpec{
			Workstream: "ws", Name: how, Harness: "h", Role: "full-access", Cmd: "x", CommandSource: "harness",
			Cwd: ".", Env: map[string]string{}, FirstPrompt: &protocol.FirstPrompt{Text: "hi", MsgID: "m1"}}}
	}
	for how, rule := range map[string]string{
		"no-handle": MismatchHandle, "no-view": MismatchView, "no-baseline": MismatchBaseline, "runs-1": MismatchBaseline,
	} {
		res, err := Invoke(ctx, p, protocol.MethodJobStart, sp(how))
		wantMismatch(t, p, err, rule)
		if res.Handle != "" {
			t.Fatalf("%s: a failed start handed out a handle %q", how, res.Handle)
		}
	}
	res, err := Invoke(ctx, p, protocol.MethodJobStart, sp("good"))
	if err != nil || res.Handle != "h1" || res.Baseline == nil || res.Baseline.Runs != 0 {
		t.Fatalf("good start: %+v, %v", res, err)
	}
}

func TestReplyCheckJobLookupFound(t *testing.T) {
	p, _ := wrongPlugin(t)
	ctx := context.Background()
	lp := func(key string) protocol.LookupParams {
		return protocol.LookupParams{Base: protocol.Base{Target: tgt}, Key: key, Fence: true}
	}
	for key, rule := range map[string]string{"no-view": MismatchView, "no-baseline": MismatchBaseline, "runs-1": MismatchBaseline} {
		res, err := Invoke(ctx, p, protocol.MethodJobLookup, lp(key))
		wantMismatch(t, p, err, rule)
		if res.Found != nil {
			t.Fatalf("%s: a failed lookup handed out found", key)
		}
	}
	if res, err := Invoke(ctx, p, protocol.MethodJobLookup, lp("good")); err != nil || res.Found == nil || res.Found.Handle != "h1" {
		t.Fatalf("good lookup: %+v, %v", res, err)
	}
}

func TestReplyCheckReceiptEchoesMsgID(t *testing.T) {
	p, _ := wrongPlugin(t)
	ctx := context.Background()
	_, err := Invoke(ctx, p, protocol.MethodChannelReceipt, protocol.ReceiptParams{Base: protocol.Base{Target: tgt}, MsgID: "wrong"})
	wantMismatch(t, p, err, MismatchMsgID)
	rc, err := Invoke(ctx, p, protocol.MethodChannelReceipt, protocol.ReceiptParams{Base: protocol.Base{Target: tgt}, MsgID: "m7"})
	if err != nil || rc.ID != "m7" || rc.State != protocol.ReceiptAccepted {
		t.Fatalf("good receipt: %+v, %v", rc, err)
	}
}

func TestReplyCheckReadStatesKeepsTheAskedAgent(t *testing.T) {
	p, _ := wrongPlugin(t)
	ctx := context.Background()
	ask := func(name string) protocol.ReadStatesParams {
		return protocol.ReadStatesParams{Base: protocol.Base{Target: tgt}, Targets: []protocol.AgentName{{Workstream: "ws", Name: name}}}
	}
	_, err := Invoke(ctx, p, protocol.MethodChannelReadStates, ask("missing"))
	wantMismatch(t, p, err, MismatchAgent)
	got, err := Invoke(ctx, p, protocol.MethodChannelReadStates, ask("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["ws/a"]; !ok || len(got) != 1 {
		t.Fatalf("readStates kept %v, want only ws/a (ws/other ignored)", got)
	}
}

func TestReplyCheckSendChannelAndMsgID(t *testing.T) {
	p, _ := wrongPlugin(t)
	ctx := context.Background()
	send := func(id string) (protocol.SendResult, error) {
		return Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: tgt}, Text: "x", MsgID: id, Mode: protocol.ModeFollowUp})
	}
	_, err := send("wrong-channel")
	wantMismatch(t, p, err, MismatchChannel)
	_, err = send("wrong-id")
	wantMismatch(t, p, err, MismatchMsgID)
	if r, err := send("m1"); err != nil || r.MsgID != "m1" {
		t.Fatalf("good send: %+v, %v", r, err)
	}
}

// CheckReply, the raw form the replay journal uses, agrees with the typed
// helpers.
func TestCheckReplyRaw(t *testing.T) {
	decl := testDecl("x")
	decl.Seams = wrongSeams()
	cases := []struct {
		method, params, result, rule string
	}{
		{protocol.MethodJobStart.Name, `{}`, `{"view":{"command":"v","env":{}},"baseline":{"runs":0}}`, MismatchHandle},
		{protocol.MethodJobStart.Name, `{}`, `{"view":{"command":"v","env":{}},"handle":"h","baseline":{"runs":2}}`, MismatchBaseline},
		{protocol.MethodJobStart.Name, `{}`, `{"view":{"command":"v","env":{}},"handle":"h","baseline":{"runs":0}}`, ""},
		{protocol.MethodJobLookup.Name, `{}`, `{"found":{"handle":"h","baseline":{"runs":0}}}`, MismatchView},
		{protocol.MethodJobLookup.Name, `{}`, `{"none":true}`, ""},
		{protocol.MethodChannelReceipt.Name, `{"msgId":"a"}`, `{"state":"accepted","id":"b"}`, MismatchMsgID},
		{protocol.MethodChannelReadStates.Name, `{"targets":[{"workstream":"w","name":"n"}]}`, `{"w/m":{"state":"idle","since":1,"runs":0,"incarnation":"i"}}`, MismatchAgent},
		{protocol.MethodChannelSend.Name, `{"msgId":"a"}`, `{"channel":"tchan","ack":"confirmed","msgId":"b"}`, MismatchMsgID},
		{protocol.MethodChannelFresh.Name, `{"msgId":"a"}`, `{"channel":"other","ack":"confirmed"}`, MismatchChannel},
		{protocol.MethodChannelInterrupt.Name, `{"msgId":"a"}`, `{"wasBusy":false,"pending":false,"msgId":"c"}`, MismatchMsgID},
		{protocol.MethodHostLookup.Name, `{}`, `{"found":{"handle":""}}`, MismatchHandle},
		{protocol.MethodLinkExec.Name, `{}`, `{}`, ""},
	}
	for _, c := range cases {
		err := CheckReply(decl, c.method, []byte(c.params), []byte(c.result))
		var me *MismatchError
		switch {
		case c.rule == "" && err != nil:
			t.Errorf("%s %s: %v, want no mismatch", c.method, c.result, err)
		case c.rule != "" && (!errors.As(err, &me) || me.Rule != c.rule):
			t.Errorf("%s %s: %v, want a mismatch about %s", c.method, c.result, err, c.rule)
		}
	}
}

// A call under ExpectInstance goes only to that instance: under another,
// nothing is written (the transcript shows no such line) and the error is
// not-sent, naming stop-changed.
func TestExpectInstanceRefusesBeforeWriting(t *testing.T) {
	p, h := wrongPlugin(t)
	ctx := ExpectInstance(context.Background(), "prod-eu")
	_, err := Invoke(ctx, p, protocol.MethodChannelReceipt, protocol.ReceiptParams{Base: protocol.Base{Target: tgt}, MsgID: "m1"})
	var ie *InstanceError
	if !errors.Is(err, ErrNotSent) || !errors.Is(err, ErrInstanceChanged) || !errors.As(err, &ie) {
		t.Fatalf("err = %v, want not sent, instance changed", err)
	}
	if ie.Recorded != "prod-eu" || ie.Current != "test" || !strings.Contains(err.Error(), RuleStopChanged) {
		t.Fatalf("err = %v (%+v)", err, ie)
	}
	if _, err := p.Call(ctx, protocol.MethodJobStop.Name, protocol.KeyParams{Base: protocol.Base{Target: tgt}, Key: "k"}, 0); !errors.Is(err, ErrInstanceChanged) {
		t.Fatalf("Call under another instance: %v", err)
	}
	if l := h.tr.Containing(Out, protocol.MethodChannelReceipt.Name); len(l) != 0 {
		t.Fatalf("a call under another instance was written: %q", l)
	}
	if l := h.tr.Containing(Out, protocol.MethodJobStop.Name); len(l) != 0 {
		t.Fatalf("a call under another instance was written: %q", l)
	}
	// Under the plugin's own instance it goes.
	ok := ExpectInstance(context.Background(), "test")
	if _, err := Invoke(ok, p, protocol.MethodChannelReceipt, protocol.ReceiptParams{Base: protocol.Base{Target: tgt}, MsgID: "m1"}); err != nil {
		t.Fatalf("under the same instance: %v", err)
	}
	if p.Broken() != nil {
		t.Fatal(p.Broken())
	}
}
