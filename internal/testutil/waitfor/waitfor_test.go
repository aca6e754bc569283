package waitfor

import (
	"context"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	n := 0
	if !Poll(Patience, func() bool { n++; return n == 3 }) || n != 3 {
		t.Fatalf("Poll stopped after %d calls", n)
	}
	calls := 0
	if Poll(20*time.Millisecond, func() bool { calls++; return false }) {
		t.Fatal("Poll reported a condition that never held")
	}
	if calls < 2 {
		t.Fatalf("cond called %d times in 20 ms", calls)
	}
}

// PollContext calls cond until it holds, and stops when its context
// ends.
func TestPollContext(t *testing.T) {
	n := 0
	if !PollContext(context.Background(), time.Millisecond, func() bool { n++; return n == 3 }) || n != 3 {
		t.Fatalf("PollContext stopped after %d calls", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	if PollContext(ctx, time.Millisecond, func() bool {
		if calls++; calls == 2 {
			cancel()
		}
		return false
	}) {
		t.Fatal("PollContext reported a condition that never held")
	}
	if calls != 2 {
		t.Fatalf("cond called %d times, want 2 (the context ended after the second)", calls)
	}
}
