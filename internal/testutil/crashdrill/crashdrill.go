// Package crashdrill holds a crash drill's parts: trials run a bounded
// number at once (Trials, ParallelAtMost, Parallel), the point of a kill
// spread over a span (KillPoint), outcomes counted (Tally).
package crashdrill

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// A crash drill's parts (the SIGKILL drills of mu-plugin-docker's,
// mu-plugin-k8s's and the integration tests): trials run side by side,
// each killing a plugin at its own point of a call, their outcomes
// counted.

// ParallelAtMost runs f(0) … f(n-1), at most conc at once, each on its
// own goroutine, and returns once all have.
func ParallelAtMost(n, conc int, f func(i int)) {
	sem := make(chan struct{}, max(conc, 1))
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(i)
		})
	}
	wg.Wait()
}

// Trials runs trial(i) for i in 0..n-1, each as the subtest "i" of t,
// conc at a time (t.Run from goroutines: not capped by -parallel).
func Trials(t *testing.T, n, conc int, trial func(t *testing.T, i int)) {
	ParallelAtMost(n, conc, func(i int) {
		t.Run(fmt.Sprint(i), func(t *testing.T) { trial(t, i) })
	})
}

// KillPoint is trial i of n's kill time: the trials' points spread evenly
// over [0, span) (stratified, each at a random place in its own slice), so
// every part of the call is hit whatever n is.
func KillPoint(i, n int, span time.Duration) time.Duration {
	slice := span / time.Duration(max(n, 1))
	return time.Duration(i)*slice + time.Duration(rand.Int64N(int64(slice)+1))
}

// Tally counts a drill's outcomes from its concurrent trials; its zero
// value is empty and ready.
type Tally struct {
	mu sync.Mutex
	n  map[string]int
}

// Add counts one outcome k.
func (c *Tally) Add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
}

// Count is how many times k was counted.
func (c *Tally) Count(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

// String is the counts, as a map prints.
func (c *Tally) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprint(c.n)
}
