package sshlink

import (
	"context"
	"sync"
)

// slots is a connection's session semaphore: below the server's
// MaxSessions, one session kept for stops. A slot is released only once its
// session ended (sshd holds it until the remote process exits).
type slots struct {
	mu   sync.Mutex
	cap  int
	used int
	wake chan struct{}
}

func newSlots(n int) *slots {
	if n < 1 {
		n = 1
	}
	return &slots{cap: n, wake: make(chan struct{})}
}

func (s *slots) acquire(ctx context.Context) error {
	for {
		s.mu.Lock()
		if s.used < s.cap {
			s.used++
			s.mu.Unlock()
			return nil
		}
		w := s.wake
		s.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *slots) release() {
	s.mu.Lock()
	s.used--
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// shrink lowers the capacity after the server refused a session while
// `used` (this caller's included) were held: the server's real limit is
// below ours. It returns false when no capacity is left at all.
func (s *slots) shrink() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.used - 1; n < s.cap {
		s.cap = n
	}
	if s.cap < 1 {
		s.cap = 1
		return s.used > 1
	}
	return true
}

func (s *slots) capacity() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cap
}
