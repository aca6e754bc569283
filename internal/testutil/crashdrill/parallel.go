package crashdrill

import "sync"

// Parallel runs f(0) … f(n-1) each on its own goroutine and returns once
// all have.
func Parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
}
