package crashdrill

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ParallelAtMost runs every f(i) once, never more than conc at once.
func TestParallelAtMost(t *testing.T) {
	const n, conc = 40, 3
	var running, peak atomic.Int32
	ran := make([]int, n)
	ParallelAtMost(n, conc, func(i int) {
		r := running.Add(1)
		for p := peak.Load(); r > p && !peak.CompareAndSwap(p, r); p = peak.Load() {
		}
		time.Sleep(time.Millisecond)
		ran[i]++
		running.Add(-1)
	})
	for i, k := range ran {
		if k != 1 {
			t.Errorf("f(%d) ran %d times", i, k)
		}
	}
	if p := peak.Load(); p > conc {
		t.Errorf("%d ran at once, want at most %d", p, conc)
	}
}

// Trials runs each trial as its own subtest, named by its number.
func TestTrials(t *testing.T) {
	var mu sync.Mutex
	names := map[string]int{}
	Trials(t, 5, 2, func(st *testing.T, i int) {
		mu.Lock()
		defer mu.Unlock()
		names[st.Name()] = i
	})
	for i := range 5 {
		if got, ok := names[t.Name()+"/"+string(rune('0'+i))]; !ok || got != i {
			t.Errorf("trial %d: subtests %v", i, names)
		}
	}
}

// KillPoint puts trial i of n in the i-th slice of the span.
func TestKillPoint(t *testing.T) {
	const n, span = 7, 70 * time.Millisecond
	for range 50 {
		for i := range n {
			at, slice := KillPoint(i, n, span), span/n
			if at < time.Duration(i)*slice || at > time.Duration(i+1)*slice {
				t.Fatalf("trial %d of %d: %v, outside [%v, %v]", i, n, at, time.Duration(i)*slice, time.Duration(i+1)*slice)
			}
		}
	}
}

// A Tally counts every outcome of concurrent trials.
func TestTally(t *testing.T) {
	var c Tally
	if c.Count("found") != 0 || c.String() != "map[]" {
		t.Fatalf("an empty tally: %v", &c)
	}
	Parallel(100, func(i int) { c.Add([]string{"found", "none"}[i%2]) })
	if c.Count("found") != 50 || c.Count("none") != 50 || c.String() != "map[found:50 none:50]" {
		t.Fatalf("tally %v", &c)
	}
}

// Parallel runs each index once, all of them before it returns.
func TestParallel(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	Parallel(20, func(i int) { mu.Lock(); seen[i]++; mu.Unlock() })
	for i := range 20 {
		if seen[i] != 1 {
			t.Fatalf("index %d ran %d times (%v)", i, seen[i], seen)
		}
	}
	if len(seen) != 20 {
		t.Fatalf("indexes %v, want 0 to 19", seen)
	}
}
