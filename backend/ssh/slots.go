package ssh

import (
	"context"
	"sync"
	"time"
)

// regrowAfter is how long after the server's last refusal the slots may
// grow back by one: a refusal can come from sessions the server was still
// tearing down, and must not shrink a connection for good.
const regrowAfter = 10 * time.Second

// slots is a connection's session semaphore: below the server's
// MaxSessions, one session kept for stops. A slot is released only once its
// session ended (sshd holds it until the remote process exits).
type slots struct {
	mu          sync.Mutex
	max         int // what --max-sessions allows for scripts
	cap         int // what the server is believed to allow now
	used        int // taken: opening or open
	live        int // open sessions
	lastRefusal time.Time
	wake        chan struct{}
}

func newSlots(n int) *slots {
	if n < 1 {
		n = 1
	}
	return &slots{max: n, cap: n, wake: make(chan struct{})}
}

func (s *slots) acquire(ctx context.Context) error {
	for {
		s.mu.Lock()
		if s.used >= s.cap && s.cap < s.max && time.Since(s.lastRefusal) > regrowAfter {
			s.cap++
			s.lastRefusal = time.Now() // one step per period
		}
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

// release gives back a slot whose session never opened.
func (s *slots) release() {
	s.mu.Lock()
	s.used--
	s.wakeLocked()
	s.mu.Unlock()
}

// opened records that a slot's session is open.
func (s *slots) opened() {
	s.mu.Lock()
	s.live++
	s.mu.Unlock()
}

// closed gives back a slot whose session ended.
func (s *slots) closed() {
	s.mu.Lock()
	s.used--
	s.live--
	s.wakeLocked()
	s.mu.Unlock()
}

func (s *slots) wakeLocked() {
	close(s.wake)
	s.wake = make(chan struct{})
}

// refused records the server's refusal of a session (OpenSSH: "open
// failed"): the server is full. The capacity drops by one, never below the
// sessions open now nor below one, and the caller queues. With none of ours
// open (sessions still being torn down on the server, or another client's),
// the caller also backs off before trying again.
func (s *slots) refused() (backoff bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastRefusal = time.Now()
	if n := max(s.cap-1, s.live, 1); n < s.cap {
		s.cap = n
	}
	return s.live == 0
}

// reserve lowers the capacity below the sessions open now, after the
// server refused the control session: the next session to end makes room
// for it rather than for another script.
func (s *slots) reserve() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastRefusal = time.Now()
	if n := max(s.live-1, 1); n < s.cap {
		s.cap = n
	}
}

func (s *slots) capacity() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cap
}
