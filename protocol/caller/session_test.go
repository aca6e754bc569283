package caller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

func TestSessionRestartsAfterDeadline(t *testing.T) {
	h := newHarness(t, "good", "good")
	s := NewSession(h.cfg)
	defer s.Close()
	ctx := context.Background()
	ps := execParams("sleep")
	ps.TimeoutMs = 60000
	if _, err := s.Call(ctx, protocol.MethodLinkExec.Name, ps, 200*time.Millisecond); !errors.Is(err, ErrDeadline) {
		t.Fatalf("first call: %v", err)
	}
	if _, err := s.Call(ctx, protocol.MethodLinkExec.Name, execParams("x"), 0); err != nil {
		t.Fatalf("the next call: %v", err)
	}
	if s.Starts() != 2 || len(h.tr.Containing(Out, `"method":"initialize"`)) != 2 {
		t.Fatalf("starts %d", s.Starts())
	}
	rep := s.Close()
	if !rep.GroupEmpty {
		t.Fatalf("close: %+v", rep)
	}
	if _, err := s.Plugin(ctx); !errors.Is(err, ErrTerminating) {
		t.Fatalf("after close: %v", err)
	}
}

func TestSessionRefusedAfterViolation(t *testing.T) {
	h := newHarness(t, "raw", "raw:not-json")
	s := NewSession(h.cfg)
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Call(ctx, protocol.MethodLinkExec.Name, execParams("x"), 0); !errors.Is(err, ErrBroken) {
		t.Fatalf("first call: %v", err)
	}
	_, err := s.Call(ctx, protocol.MethodLinkExec.Name, execParams("x"), 0)
	if !errors.Is(err, ErrNotSent) || !errors.Is(err, ErrBroken) {
		t.Fatalf("after the violation: %v", err)
	}
	if s.Starts() != 1 {
		t.Fatalf("restarted a broken plugin (%d starts)", s.Starts())
	}
}

func TestSessionRefusedAtLoad(t *testing.T) {
	h := newHarness(t, "raw", "raw:handshake-error")
	s := NewSession(h.cfg)
	defer s.Close()
	for range 2 {
		var lr *LoadRefusal
		if _, err := s.Plugin(context.Background()); !errors.As(err, &lr) || lr.Rule != RuleHandshakeError {
			t.Fatalf("err %v", err)
		}
	}
	if s.Starts() != 1 {
		t.Fatalf("%d starts", s.Starts())
	}
}
