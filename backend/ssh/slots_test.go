package ssh

import (
	"context"
	"testing"
	"time"
)

func TestSlotsAccounting(t *testing.T) {
	s := newSlots(4)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if err := s.acquire(ctx); err != nil {
			t.Fatal(err)
		}
		s.opened()
	}
	if err := s.acquire(ctx); err != nil { // the 4th: the server refuses it
		t.Fatal(err)
	}
	if s.refused() {
		t.Fatal("backoff with sessions open")
	}
	s.release()
	if s.capacity() != 3 {
		t.Fatalf("capacity %d, want 3 after one refusal with 3 open", s.capacity())
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := s.acquire(short); err == nil {
		t.Fatal("a 4th slot was granted while 3 of 3 are taken")
	}
	s.closed()
	if err := s.acquire(ctx); err != nil {
		t.Fatalf("a freed slot was not granted: %v", err)
	}
	// Regrowth once refusals stop.
	s.lastRefusal = time.Now().Add(-2 * regrowAfter)
	if err := s.acquire(ctx); err != nil || s.capacity() != 4 {
		t.Fatalf("no regrowth: %v cap %d", err, s.capacity())
	}
}
