package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"
)

// The cut-run rule, on the wire: a link.exec, link.fetch or link.push cut
// by $/cancel after its handler began answers unknown-outcome whatever its
// backend returned (a bare context error, a retryable, a wrapped one), unless
// the backend built its error with NotStarted. A read cut the same way is
// retryable: nothing happened.
func TestCutRunRule(t *testing.T) {
	started := make(chan struct{}, 1)
	cutWith := func(mk func(ctx context.Context) error) Handler {
		return func(ctx context.Context, c *Call) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, mk(ctx)
		}
	}
	var ret func(ctx context.Context) error
	h := cutWith(func(ctx context.Context) error { return ret(ctx) })
	s := serve(t, map[string]Handler{MethodLinkExec: h, MethodLinkFetch: h, MethodLinkPush: h, MethodHostStatus: h})
	s.init()
	cases := []struct {
		method, why string
		ret         func(ctx context.Context) error
		want        string
	}{
		{MethodLinkExec, "bare context error", func(ctx context.Context) error { return ctx.Err() },
			`{"code":-32004,"message":"context canceled","data":{"kind":"unknown-outcome"}}`},
		{MethodLinkFetch, "retryable chosen by the backend", func(context.Context) error { return Errorf(Retryable, "git stopped") },
			`{"code":-32004,"message":"git stopped","data":{"kind":"unknown-outcome"}}`},
		{MethodLinkPush, "retryable wrapping the context error", func(ctx context.Context) error { return Wrap(Retryable, ctx.Err(), "push") },
			`{"code":-32004,"message":"push: context canceled","data":{"kind":"unknown-outcome"}}`},
		{MethodLinkExec, "permanent chosen by the backend", func(context.Context) error { return Errorf(Permanent, "gone") },
			`{"code":-32004,"message":"gone","data":{"kind":"unknown-outcome"}}`},
		{MethodLinkExec, "NotStarted", func(ctx context.Context) error { return NotStarted(ctx.Err(), "no session opened") },
			`{"code":-32001,"message":"no session opened: context canceled","data":{"kind":"retryable"}}`},
		{MethodHostStatus, "a read", func(ctx context.Context) error { return ctx.Err() },
			`{"code":-32001,"message":"context canceled","data":{"kind":"retryable"}}`},
	}
	for i, c := range cases {
		ret = c.ret
		id := fmt.Sprint(100 + i)
		s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + c.method + `","params":{` + base + `}}`)
		<-started
		s.send(`{"jsonrpc":"2.0","method":"$/cancel","params":{"id":` + id + `}}`)
		if got, want := s.recv(), `{"jsonrpc":"2.0","id":`+id+`,"error":`+c.want+`}`; got != want {
			t.Errorf("%s, %s:\ngot  %s\nwant %s", c.method, c.why, got, want)
		}
	}
}

// ToWire's classes, method by method: the cut-run rule for runs, a plain
// error's kind by class, and a typed kind kept outside the rule.
func TestToWireClasses(t *testing.T) {
	cut := &cutError{err: io.ErrUnexpectedEOF, cause: context.DeadlineExceeded}
	for _, c := range []struct {
		err    error
		method string
		want   Kind
	}{
		{context.DeadlineExceeded, MethodLinkExec, UnknownOutcome},
		{context.DeadlineExceeded, MethodLinkFetch, UnknownOutcome},
		{context.Canceled, MethodLinkPush, UnknownOutcome},
		{cut, MethodLinkExec, UnknownOutcome},
		{Wrap(Retryable, context.DeadlineExceeded, "x"), MethodLinkExec, UnknownOutcome},
		{NotStarted(context.DeadlineExceeded, "x"), MethodLinkExec, Retryable},
		{&cutError{err: NotStarted(nil, "x"), cause: context.Canceled}, MethodLinkFetch, Retryable},
		{Errorf(Retryable, "busy"), MethodLinkExec, Retryable}, // not cut: the backend's kind
		{io.ErrUnexpectedEOF, MethodLinkExec, UnknownOutcome},  // a run may have happened
		{io.ErrUnexpectedEOF, MethodJobStart, UnknownOutcome},
		{io.ErrUnexpectedEOF, MethodHostStatus, Permanent},
		{context.DeadlineExceeded, MethodHostStatus, Retryable},
		{context.DeadlineExceeded, MethodJobStart, UnknownOutcome},
		{Wrap(Retryable, context.Canceled, "x"), MethodJobStop, Retryable}, // the rule is about runs
		{cut, MethodLinkCheckSteps, Retryable},                             // a read cut by its context
	} {
		var d ErrorData
		w := ToWire(c.err, c.method)
		if err := json.Unmarshal(w.Data, &d); err != nil || d.Kind != c.want {
			t.Errorf("ToWire(%v, %s): %s, want %s", c.err, c.method, d.Kind, c.want)
		}
		if d.Kind == UnknownOutcome && w.Code != CodeUnknownOutcome {
			t.Errorf("ToWire(%v, %s): code %d", c.err, c.method, w.Code)
		}
	}
	if !errors.Is(cut, context.DeadlineExceeded) || cut.Error() != io.ErrUnexpectedEOF.Error() {
		t.Error("cutError must keep its error's text and add the context's error")
	}
}
