package tmuxjob

import (
	"context"
	"fmt"
	"strconv"
	"sync"
)

// Watches multiplexes every channel.watch of one host (one Runner, one
// Root) onto one wait run at a time (scripts/wait.sh): an SSH host's
// sessions are few (sshd's MaxSessions, 10 by default), and a run a watch
// would hold all its life starves every other call. A watch registers what
// it waits for; the run waits for all of them and says which are ready; a
// watch that is ready then reads its turn in a short run of its own. A new
// watch restarts the run with itself added; the last one gone ends it.
//
// A backend shares one Watches per host across its calls (Options.Watches);
// a Jobs without one has its own.
type Watches struct {
	mu      sync.Mutex
	waiting map[*waiter]struct{}
	running bool
	cancel  context.CancelFunc // the run in flight's
}

// waiter is one watch's wait: turn n of inc of job id.
type waiter struct {
	id, inc string
	n       int64
	done    chan error // one answer: nil when ready, else the run's error
}

// NewWatches is an empty Watches.
func NewWatches() *Watches { return &Watches{waiting: map[*waiter]struct{}{}} }

// ready returns once turn n of inc of key's job has a record, the
// incarnation is another or the job is gone (a read then says which), or
// with the run's error (the caller tries again), or ctx's.
func (w *Watches) ready(ctx context.Context, j *Jobs, key, inc string, n int64) error {
	wt := &waiter{id: jobID(key), inc: inc, n: n, done: make(chan error, 1)}
	w.mu.Lock()
	w.waiting[wt] = struct{}{}
	if w.cancel != nil {
		w.cancel() // the run starts again, with this watch
	}
	if !w.running {
		w.running = true
		go w.loop(j)
	}
	w.mu.Unlock()
	select {
	case err := <-wt.done:
		return err
	case <-ctx.Done():
		w.mu.Lock()
		delete(w.waiting, wt)
		if len(w.waiting) == 0 && w.cancel != nil {
			w.cancel()
		}
		w.mu.Unlock()
		return ctx.Err()
	}
}

// loop runs the wait for every watch registered, again and again, until
// none is left. j is the first watch's Jobs: every Jobs sharing a Watches
// reaches the same host and root.
func (w *Watches) loop(j *Jobs) {
	for {
		w.mu.Lock()
		if len(w.waiting) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		set := make([]*waiter, 0, len(w.waiting))
		for wt := range w.waiting {
			set = append(set, wt)
		}
		ctx, cancel := context.WithCancel(context.Background())
		w.cancel = cancel
		w.mu.Unlock()
		ready, err := j.waitAny(ctx, set)
		restarted := ctx.Err() != nil
		cancel()
		w.mu.Lock()
		w.cancel = nil
		for i, wt := range set {
			if _, ok := w.waiting[wt]; !ok || restarted {
				continue
			}
			switch {
			case err != nil:
				wt.done <- err
			case ready[i]:
				wt.done <- nil
			default:
				continue
			}
			delete(w.waiting, wt)
		}
		w.mu.Unlock()
	}
}

// waitLooks bounds one wait run on the host to this many looks (10 s at
// the default Options.Poll): a run whose caller went away (the Engine
// cannot kill an exec) lives at most that long.
const waitLooks = 100

// waitAny waits on the host, in one run of at most waitLooks, until one of
// set is ready; it says which are.
func (j *Jobs) waitAny(ctx context.Context, set []*waiter) (map[int]bool, error) {
	every := fmt.Sprintf("%.3f", j.opts.Poll.Seconds())
	bound := fmt.Sprintf("%.3f", (waitLooks * j.opts.Poll).Seconds())
	args := []string{strconv.Itoa(waitLooks), every, bound}
	for _, wt := range set {
		args = append(args, wt.id, wt.inc, strconv.FormatInt(wt.n, 10))
	}
	o, err := j.run(ctx, "wait", "-", nil, args...)
	if err != nil {
		return nil, err
	}
	ready := map[int]bool{}
	for _, v := range o.all("ready") {
		if i, err := strconv.Atoi(v); err == nil && i >= 0 && i < len(set) {
			ready[i] = true
		}
	}
	return ready, nil
}

// HostWatches keeps one Watches per host (a key the backend chooses: its
// host, and the root when that varies), for every Jobs of the host to
// share. The zero value is ready.
type HostWatches struct {
	mu sync.Mutex
	m  map[string]*Watches
}

// Of is host's Watches.
func (h *HostWatches) Of(host string) *Watches {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]*Watches{}
	}
	if h.m[host] == nil {
		h.m[host] = NewWatches()
	}
	return h.m[host]
}

// Forget drops host's Watches (the host is gone; one of the same name
// later gets its own).
func (h *HostWatches) Forget(host string) {
	h.mu.Lock()
	delete(h.m, host)
	h.mu.Unlock()
}
