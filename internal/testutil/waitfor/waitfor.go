// Package waitfor waits for an outcome in tests, never a fixed sleep:
// Eventually (or fail the test), Poll and PollContext (report), Context (a
// test's context with a deadline), all within Patience.
package waitfor

import (
	"context"
	"testing"
	"time"
)

// Patience bounds Eventually: generous, since the machines that run the
// tests are noisy. It is a bound on a wait for an outcome, never a
// measurement.
const Patience = time.Minute

// Eventually waits until cond holds and fails the test, naming what, when
// it still does not after Patience. It polls often at first, then every
// 100 ms.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Poll(Patience, cond) {
		t.Fatalf("never happened within %v: %s", Patience, what)
	}
}

// Poll waits at most d for cond to hold and reports whether it did. cond
// is called at once, then after pauses growing from 5 ms to 100 ms.
func Poll(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	pause := 5 * time.Millisecond
	for !cond() {
		if !time.Now().Before(end) {
			return false
		}
		time.Sleep(min(pause, time.Until(end)))
		pause = min(2*pause, 100*time.Millisecond)
	}
	return true
}

// PollContext waits until cond holds or ctx ends, and reports whether
// cond held. cond is called at once, then every pause (a wait whose
// cond is costly, a command run on a loaded host, says how often).
func PollContext(ctx context.Context, pause time.Duration, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(pause):
		}
	}
	return true
}

// Context is a context that ends after d, or when the test ends.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
