package caller

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
)

var idAndDeadline = regexp.MustCompile(`"id":\d+|"deadline":\d+`)

// TestRetryResendsIdenticalParams: a retryable error is retried with
// byte-identical params; only the id and the deadline change.
func TestRetryResendsIdenticalParams(t *testing.T) {
	h, p := startGood(t)
	params := execParams("retry-twice")
	params.Base.Target.Agent = &protocol.AgentRef{Workstream: "ws", Name: "a<b>&c", Incarnation: 3}
	res, err := Invoke(context.Background(), p, protocol.MethodLinkExec, params)
	if err != nil || res.Stdout != "third time" {
		t.Fatalf("%+v %v", res, err)
	}
	lines := h.tr.Containing(Out, `"link.exec"`)
	if len(lines) != 3 {
		t.Fatalf("%d sends: %q", len(lines), lines)
	}
	ids := map[string]bool{}
	for _, l := range lines {
		ids[regexp.MustCompile(`"id":\d+`).FindString(l)] = true
		if a, b := idAndDeadline.ReplaceAllString(l, ""), idAndDeadline.ReplaceAllString(lines[0], ""); a != b {
			t.Fatalf("resend differs:\n%s\n%s", l, lines[0])
		}
	}
	if len(ids) != 3 {
		t.Fatalf("ids reused: %v", ids)
	}
}

// TestRetriesAtMostThree: four sends in all, then the retryable error.
func TestRetriesAtMostThree(t *testing.T) {
	h, p := startGood(t)
	_, err := p.Exec(context.Background(), tgt, "retry-always", ".", 0)
	var re *RemoteError
	if !errors.As(err, &re) || re.Kind != protocol.Retryable {
		t.Fatalf("err %v", err)
	}
	if n := len(h.tr.Containing(Out, `"link.exec"`)); n != 4 {
		t.Fatalf("%d sends, want 1 + 3 retries", n)
	}
}

// TestManualResend: Send of one Request twice is a resend.
func TestManualResend(t *testing.T) {
	h, p := startGood(t)
	r, err := NewRequest(protocol.MethodLinkExec.Name, execParams("x"))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := p.Send(context.Background(), r, 0); err != nil {
			t.Fatal(err)
		}
	}
	l := h.tr.Containing(Out, `"link.exec"`)
	if len(l) != 2 || idAndDeadline.ReplaceAllString(l[0], "") != idAndDeadline.ReplaceAllString(l[1], "") || l[0] == l[1] {
		t.Fatalf("resends %q", l)
	}
}

func TestRemoteErrorsTyped(t *testing.T) {
	h, p := startGood(t)
	_, err := p.Exec(context.Background(), tgt, "human", ".", 0)
	var re *RemoteError
	if !errors.As(err, &re) || re.Kind != protocol.Human || re.Remedy != "log in first" || re.Code != int64(protocol.CodeHuman) {
		t.Fatalf("err %#v", err)
	}
	if n := len(h.tr.Containing(Out, `"link.exec"`)); n != 1 {
		t.Fatalf("a human error was retried (%d sends)", n)
	}
	// An unknown method is answered, typed, and the plugin stays usable.
	_, err = p.Call(context.Background(), "link.nope", protocol.Base{Target: tgt}, 0)
	if !errors.Is(err, ErrNotSent) {
		t.Fatalf("a method the schema does not know was sent: %v", err)
	}
	if p.Broken() != nil {
		t.Fatal(p.Broken())
	}
}

// TestWatchNotifies: the one notification arrives after the reply.
func TestWatchNotifies(t *testing.T) {
	h, p := startGood(t)
	w, err := p.Watch(context.Background(), protocol.WatchParams{Base: protocol.Base{Target: tgt}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	n, err := w.Wait(context.Background())
	if err != nil || n.Method != protocol.NotifyWatchSettled || n.Settled.WatchID != w.ID || n.Settled.Observation.Runs != 1 {
		t.Fatalf("%+v %v", n, err)
	}
	in := h.tr.Lines(In)
	if !strings.Contains(in[len(in)-1], `"watch/settled"`) || !strings.Contains(in[len(in)-2], `"watchId":"`+w.ID+`"`) {
		t.Fatalf("wire order: %q", in)
	}
}

// TestWatchCancel: Cancel sends $/cancel {watchId}; the plugin ends the
// watch; the channel closes without a value; the plugin stays up.
func TestWatchCancel(t *testing.T) {
	h, p := startGood(t)
	w, err := p.Watch(context.Background(), protocol.WatchParams{Base: protocol.Base{Target: tgt}, AfterRuns: protocol.Int64(99)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Cancel()
	w.Cancel() // a no-op
	if _, err := w.Wait(context.Background()); !errors.Is(err, ErrWatchEnded) {
		t.Fatalf("wait: %v", err)
	}
	waitfor.Eventually(t, "the plugin to end the watch", func() bool { return strings.Contains(h.stderr.String(), "watch ended: "+w.ID) })
	if n := len(h.tr.Containing(Out, `"$/cancel","params":{"watchId":"`+w.ID+`"}`)); n != 1 {
		t.Fatalf("%d watch cancels: %q", n, h.tr.Lines(Out))
	}
	if _, err := p.Exec(context.Background(), tgt, "x", ".", 0); err != nil {
		t.Fatal(err)
	}
}

// TestWatchEndsOnStop: an open watch's channel closes when the plugin stops.
func TestWatchEndsOnStop(t *testing.T) {
	p := newHarness(t, "good", "good").start(t)
	w, err := p.Watch(context.Background(), protocol.WatchParams{Base: protocol.Base{Target: tgt}, AfterRuns: protocol.Int64(99)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	p.Stop()
	if _, err := w.Wait(context.Background()); !errors.Is(err, ErrWatchEnded) || !errors.Is(err, ErrStopped) {
		t.Fatalf("wait: %v", err)
	}
}

// TestSecretsStayOutOfErrors: the caller logs nothing, and no error it
// makes carries params; only the transcript (for canary checks) has them.
func TestSecretsStayOutOfErrors(t *testing.T) {
	const canary = "CANARY-4f1d2b"
	h := newHarness(t, "raw", "raw:hang")
	p := h.start(t)
	ps := execParams("echo " + canary)
	_, err := p.Call(context.Background(), protocol.MethodLinkExec.Name, ps, 100e6)
	if err == nil || strings.Contains(err.Error(), canary) {
		t.Fatalf("err %v", err)
	}
	rep := p.Stop()
	if strings.Contains(rep.Cause.Error(), canary) {
		t.Fatalf("stop cause carries params: %v", rep.Cause)
	}
	if len(h.tr.Containing(Out, canary)) != 1 {
		t.Fatal("the transcript lacks the params")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Call(ctx, protocol.MethodLinkExec.Name, ps, 0); strings.Contains(err.Error(), canary) {
		t.Fatalf("not-sent error carries params: %v", err)
	}
}

func TestTypedNullResults(t *testing.T) {
	h, p := startGood(t)
	b, err := Invoke(context.Background(), p, protocol.MethodChannelBaseline, protocol.Base{Target: tgt})
	if err != nil || b != nil {
		t.Fatalf("baseline %+v %v", b, err)
	}
	if _, err := Invoke(context.Background(), p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: tgt}, Key: "k1"}); err != nil {
		t.Fatal(err)
	}
	if l := h.tr.Containing(Out, `"method":"job.stop","params":{"deadline":`); len(l) != 1 || !strings.Contains(l[0], `"key":"k1"`) {
		t.Fatalf("job.stop lines %q", l)
	}
	// An unserved method: a typed permanent error, the plugin stays up.
	_, err = Invoke(context.Background(), p, protocol.MethodJobAttach, protocol.Base{Target: tgt})
	var re *RemoteError
	if !errors.As(err, &re) || re.Kind != protocol.Permanent {
		t.Fatalf("job.attach: %v", err)
	}
	if p.Broken() != nil {
		t.Fatal(p.Broken())
	}
}
