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
		{context.DeadlineExceeded, MethodLinkExec.Name, UnknownOutcome},
		{context.DeadlineExceeded, MethodLinkFetch.Name, UnknownOutcome},
		{context.Canceled, MethodLinkPush.Name, UnknownOutcome},
		{cut, MethodLinkExec.Name, UnknownOutcome},
		{Wrap(Retryable, context.DeadlineExceeded, "x"), MethodLinkExec.Name, UnknownOutcome},
		{NotStarted(context.DeadlineExceeded, "x"), MethodLinkExec.Name, Retryable},
		{&cutError{err: NotStarted(nil, "x"), cause: context.Canceled}, MethodLinkFetch.Name, Retryable},
		{Errorf(Retryable, "busy"), MethodLinkExec.Name, Retryable}, // not cut: the backend's kind
		{io.ErrUnexpectedEOF, MethodLinkExec.Name, UnknownOutcome},  // a run may have happened
		{io.ErrUnexpectedEOF, MethodJobStart.Name, UnknownOutcome},
		{io.ErrUnexpectedEOF, MethodHostStatus.Name, Permanent},
		{context.DeadlineExceeded, MethodHostStatus.Name, Retryable},
		{context.DeadlineExceeded, MethodJobStart.Name, UnknownOutcome},
		{Wrap(Retryable, context.Canceled, "x"), MethodJobStop.Name, Retryable}, // the rule is about runs
		{cut, MethodLinkCheckSteps.Name, Retryable},                             // a read cut by its context
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
