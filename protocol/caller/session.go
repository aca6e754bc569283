package caller

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// ErrTerminating: the session was closed (mu is terminating): no plugin
// starts or restarts, no request is sent.
var ErrTerminating = errors.New("mu is terminating: no plugin starts")

// Session is one plugin for one invocation as mu holds it: started on
// first need, started again by the next call after a stop (a deadline, a
// cancel, its exit), refused for the rest of the invocation once it sent an
// invalid message or was refused at load, and never started again once
// Close began. A restarted plugin must declare what the first one did.
type Session struct {
	cfg Config

	mu      sync.Mutex
	cur     *Plugin
	refused error
	closed  bool
	starts  int
}

// NewSession prepares a session; nothing starts until the first need.
func NewSession(cfg Config) *Session { return &Session{cfg: cfg} }

// Plugin returns the running plugin, starting it if none runs. It fails
// with the refusal (a *LoadRefusal, or an error matching ErrBroken) once
// the plugin was refused, and with ErrTerminating after Close.
func (s *Session) Plugin(ctx context.Context) (*Plugin, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrTerminating
	}
	if s.refused != nil {
		return nil, s.refused
	}
	if p := s.cur; p != nil {
		select {
		case <-p.Stopping():
		default:
			return p, nil
		}
		// The last one is stopping: wait for its group to be gone.
		select {
		case <-p.Done():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if v := p.Violation(); v != nil {
			s.refused = v
			return nil, v
		}
	}
	cfg := s.cfg
	if s.cur != nil && len(cfg.Recorded) == 0 {
		cfg.Recorded = s.cur.DeclarationRaw()
	}
	p, err := Start(ctx, cfg)
	s.starts++
	if err != nil {
		var lr *LoadRefusal
		if errors.As(err, &lr) || errors.Is(err, ErrBroken) {
			s.refused = err
		}
		return nil, err
	}
	s.cur = p
	return p, nil
}

// Starts is how many times the session started the plugin.
func (s *Session) Starts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.starts
}

// Call is Plugin(ctx) then Call. A call that cannot start the plugin
// fails not sent.
func (s *Session) Call(ctx context.Context, method string, params any, timeout time.Duration) (json.RawMessage, error) {
	p, err := s.Plugin(ctx)
	if err != nil {
		return nil, &NotSentError{Method: method, Cause: err}
	}
	return p.Call(ctx, method, params, timeout)
}

// Close stops the running plugin, if any, and refuses every later start.
// It returns the last plugin's stop report (zero if none ever ran).
func (s *Session) Close() StopReport {
	s.mu.Lock()
	s.closed = true
	p := s.cur
	s.mu.Unlock()
	if p == nil {
		return StopReport{}
	}
	return p.Stop()
}
