package caller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
)

// TestViolationsBreakThePlugin: each crafted line breaks one transport rule;
// the plugin is broken for the invocation, reaped, and refused after.
func TestViolationsBreakThePlugin(t *testing.T) {
	cases := []struct {
		behaviour string
		rule      string
		watch     bool // the trigger is channel.watch
		invalid   bool // the trigger call itself fails as an invalid reply
	}{
		{"no-pending", VNoPending, false, false},
		{"unknown-field", VUnknownField, false, false},
		{"unknown-result-key", VSchema, false, true},
		{"not-json", VNotJSON, false, false},
		{"empty-line", VNotJSON, false, false},
		{"array", VNotObject, false, false},
		{"bad-utf8", VUTF8, false, false},
		{"overlong", VLineTooLong, false, false},
		{"request", VRequest, false, false},
		{"third-notification", VNotification, false, false},
		{"unknown-watch", VUnknownWatch, false, false},
		{"two-notifications", VSecondNotification, true, false},
		{"early-notification", VEarlyNotification, true, false},
		{"bad-result", VSchema, false, true},
		{"bad-kind", VErrorObject, false, true},
		{"no-kind", VErrorObject, false, true},
		{"both", VEnvelope, false, true},
		{"bad-version", VEnvelope, false, false},
		{"dup-key", VUnknownField, false, false},
		{"two-values", VNotJSON, false, false},
	}
	for _, c := range cases {
		t.Run(c.behaviour, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, "raw", "raw:"+c.behaviour)
			p := h.start(t)
			ctx := context.Background()
			var err error
			if c.watch {
				var w *Watch
				w, err = p.Watch(ctx, protocol.WatchParams{Base: protocol.Base{Target: tgt}}, 0)
				if err == nil {
					// The reply was fine; the violation follows it.
					<-p.Done()
					if _, ok := <-w.C(); ok && c.behaviour != "two-notifications" {
						t.Errorf("a notification was delivered")
					}
				}
			} else {
				_, err = p.Call(ctx, protocol.MethodLinkExec.Name, execParams("x"), 0)
				if err == nil && c.behaviour == "unknown-watch" {
					<-p.Done()
				} else if err == nil {
					t.Fatalf("the call succeeded")
				}
			}
			<-p.Done()
			v := p.Violation()
			if v == nil || v.Rule != c.rule {
				t.Fatalf("violation %v, want rule %s (call error %v)", v, c.rule, err)
			}
			if !errors.Is(p.Broken(), ErrBroken) {
				t.Fatalf("Broken() = %v", p.Broken())
			}
			if err != nil {
				if c.invalid && !errors.Is(err, ErrInvalidReply) {
					t.Errorf("call error %v, want an invalid reply", err)
				}
				if !c.invalid && !errors.Is(err, ErrUnanswered) {
					t.Errorf("call error %v, want unanswered", err)
				}
				if !errors.Is(err, ErrBroken) {
					t.Errorf("call error %v does not match ErrBroken", err)
				}
			}
			rep := p.Report()
			if !rep.GroupEmpty || !errors.Is(rep.Cause, ErrBroken) {
				t.Errorf("stop report %+v", rep)
			}
			// Later calls fail at once, never written, and name the break.
			before := len(h.tr.Lines(Out))
			_, err = p.Call(ctx, protocol.MethodLinkExec.Name, execParams("again"), 0)
			if !errors.Is(err, ErrNotSent) || !errors.Is(err, ErrBroken) {
				t.Fatalf("call after the break: %v", err)
			}
			if len(h.tr.Lines(Out)) != before {
				t.Fatal("a call was written after the break")
			}
			// The stop sequence ran: shutdown went out after the violation.
			if len(h.tr.Containing(Out, `"method":"shutdown"`)) != 1 {
				t.Errorf("no shutdown in %q", h.tr.Lines(Out))
			}
		})
	}
}

// TestGoodRawLinesAccepted: the raw plugin's well-formed answers pass, so
// the violations above come from the crafted line alone.
func TestGoodRawLinesAccepted(t *testing.T) {
	h := newHarness(t, "raw", "raw:one-notification")
	p := h.start(t)
	w, err := p.Watch(context.Background(), protocol.WatchParams{Base: protocol.Base{Target: tgt}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	n, err := w.Wait(context.Background())
	if err != nil || n.Settled == nil || n.Settled.WatchID != "w1" || w.ID != "w1" {
		t.Fatalf("notification %+v, %v", n, err)
	}
	if _, ok := <-w.C(); ok {
		t.Fatal("a second value on the watch channel")
	}
	if _, err := p.Exec(context.Background(), tgt, "x", ".", 0); err != nil {
		t.Fatal(err)
	}
	if p.Broken() != nil {
		t.Fatal(p.Broken())
	}
}

// TestNotificationCrossingCancelIgnored: a notification that crosses mu's
// own $/cancel {watchId} is ignored, not a violation.
func TestNotificationCrossingCancelIgnored(t *testing.T) {
	h := newHarness(t, "raw", "raw:cancel-crossing")
	p := h.start(t)
	// The first call gets a plain ok so the watch below is answered
	// normally; the settle is sent only when the cancel arrives.
	if _, err := p.Exec(context.Background(), tgt, "x", ".", 0); err != nil {
		t.Fatal(err)
	}
	w, err := p.Watch(context.Background(), protocol.WatchParams{Base: protocol.Base{Target: tgt}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Cancel()
	if _, ok := <-w.C(); ok {
		t.Fatal("a cancelled watch delivered a value")
	}
	waitfor.Eventually(t, "the crossing notification", func() bool {
		return len(h.tr.Lines(In)) >= 4 // init, exec, watch, the crossing settle
	})
	if len(h.tr.Containing(Out, `"params":{"watchId":"w1"}`)) != 1 {
		t.Fatalf("no $/cancel {watchId}: %q", h.tr.Lines(Out))
	}
	if _, err := p.Exec(context.Background(), tgt, "x", ".", 0); err != nil {
		t.Fatalf("a call after the crossing notification: %v", err)
	}
	if p.Broken() != nil {
		t.Fatalf("broken by a crossing notification: %v", p.Broken())
	}
	if !strings.Contains(h.stderr.String(), `cancel {"watchId":"w1"}`) {
		t.Fatalf("the plugin did not see the cancel: %s", h.stderr.String())
	}
}

// TestWatchReplyCrossingCancelIgnored: the plugin answers a channel.watch
// only once mu's $/cancel {id} for it arrived (mu gave up at the call's
// deadline), then sends that watch's notification. Both crossed the cancel:
// both are ignored, nothing is refused, and the stop is the deadline's.
func TestWatchReplyCrossingCancelIgnored(t *testing.T) {
	h := newHarness(t, "raw", "raw:watch-reply-crossing")
	p := h.start(t)
	_, err := p.Watch(context.Background(), protocol.WatchParams{Base: protocol.Base{Target: tgt}}, 200*time.Millisecond)
	if !errors.Is(err, ErrUnanswered) {
		t.Fatalf("the watch: %v, want unanswered", err)
	}
	<-p.Done()
	if len(h.tr.Containing(Out, `"method":"$/cancel","params":{"id":2}`)) != 1 {
		t.Fatalf("no $/cancel for the watch: %q", h.tr.Lines(Out))
	}
	in := strings.Join(h.tr.Lines(In), "\n")
	if !strings.Contains(in, `"id":2,"result":{"watchId":"w1"`) || !strings.Contains(in, `"method":"watch/settled"`) {
		t.Fatalf("the plugin did not send the crossing reply and notification: %s", in)
	}
	if v := p.Violation(); v != nil {
		t.Fatalf("refused for a reply and a notification that crossed the cancel: %v", v)
	}
	if rep := p.Report(); !errors.Is(rep.Cause, ErrDeadline) || !rep.GroupEmpty {
		t.Fatalf("stop report %+v", rep)
	}
}
