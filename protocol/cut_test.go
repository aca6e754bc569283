package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

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
