package protocol

import (
	"io"
	"sync"
)

// maxQueued bounds the bytes waiting to be written to stdout. Past it a
// new message waits for room (or the channel's close): memory stays
// bounded while a slow reader still loses nothing.
const maxQueued = 64 << 20

// outQueue writes records to w, in order, from its own goroutine. A write
// that blocks (a stdout nobody reads) then holds only that goroutine: jrpc2
// goes on reading stdin, so stdin EOF is still seen and the plugin still
// exits; Serve waits for the queue to drain only within its exit budget.
type outQueue struct {
	w io.WriteCloser

	mu     sync.Mutex
	cond   *sync.Cond // new records, room, close
	recs   [][]byte
	bytes  int
	closed bool  // no record is taken any more
	err    error // the first write error: what is left is dropped
	done   chan struct{}
}

func newOutQueue(w io.WriteCloser) *outQueue {
	q := &outQueue{w: w, done: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	go q.loop()
	return q
}

// put queues rec (which must end with its newline). It waits while the
// queue is full, and fails once the queue is closed or a write failed.
func (q *outQueue) put(rec []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.closed && q.err == nil && q.bytes > 0 && q.bytes+len(rec) > maxQueued {
		q.cond.Wait()
	}
	switch {
	case q.closed:
		return io.ErrClosedPipe
	case q.err != nil:
		return q.err
	}
	q.recs = append(q.recs, rec)
	q.bytes += len(rec)
	q.cond.Broadcast()
	return nil
}

// close takes no more records; the queued ones are still written, then w
// is closed (done).
func (q *outQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

func (q *outQueue) loop() {
	defer close(q.done)
	for {
		q.mu.Lock()
		for len(q.recs) == 0 && !q.closed {
			q.cond.Wait()
		}
		if len(q.recs) == 0 {
			q.mu.Unlock()
			_ = q.w.Close()
			return
		}
		rec := q.recs[0]
		q.recs[0] = nil
		q.recs = q.recs[1:]
		q.mu.Unlock()
		_, err := q.w.Write(rec)
		q.mu.Lock()
		q.bytes -= len(rec)
		if err != nil && q.err == nil {
			q.err = err
			q.recs, q.bytes = nil, 0
		}
		q.cond.Broadcast()
		q.mu.Unlock()
	}
}
