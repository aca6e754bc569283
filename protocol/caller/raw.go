package caller

import (
	"context"
	"io"
	"sync"

	"github.com/mu-org/mu-plugins/protocol"
)

// Raw is a plugin driven line by line, for the tests of the wire rules: it
// writes exactly the lines it is given and hands back exactly the lines
// the plugin writes, in order, judged by nothing. It starts as Start
// starts a plugin (the registration checks, argv in its own process group,
// or Config.Local in this process) but sends nothing: initialize is the
// test's to send. Every stop is the caller's one stop sequence, whatever
// begins it (Stop, CloseStdin, the plugin's exit or its stdout's end):
// shutdown (unless CloseStdin), stdin closed, the group waited for and
// killed after the grace. Config.Transcript and Config.Stderr work as for
// a Plugin. Its methods are safe for concurrent use.
type Raw struct {
	p *Plugin
}

// StartRaw registers-checks and starts the plugin, and returns at once.
// ctx bounds the start only.
func StartRaw(ctx context.Context, cfg Config) (*Raw, error) {
	p, err := launch(ctx, cfg, true)
	if err != nil {
		return nil, err
	}
	return &Raw{p: p}, nil
}

// Send writes line and a newline to the plugin's stdin, in one write. It
// gives up when ctx ends, and fails once the stop sequence began.
func (r *Raw) Send(ctx context.Context, line string) error {
	p := r.p
	if err := p.lockWrite(ctx); err != nil {
		return err
	}
	defer p.unlockWrite()
	p.mu.Lock()
	stopping := p.stopping
	p.mu.Unlock()
	if stopping {
		return p.stoppedCause()
	}
	deadline, _ := ctx.Deadline()
	_, err := p.writeCall(ctx, []byte(line), deadline)
	return err
}

// Recv returns the plugin's next line, without its newline. A line over
// 1 MiB is protocol.ErrLineTooLong (its bytes are dropped; the next Recv
// returns the line after it). Once the plugin's stdout ended and every
// line was taken it returns io.EOF; when ctx ends first, ctx's error.
func (r *Raw) Recv(ctx context.Context) ([]byte, error) { return r.p.raw.pop(ctx) }

// Stop runs the stop sequence (if nothing began it yet) and waits for it
// to finish; see Plugin.Stop. Lines already read stay for Recv.
func (r *Raw) Stop() StopReport { return r.p.Stop() }

// CloseStdin only closes stdin and waits for the group to empty, as
// Plugin.CloseStdin. Lines already read stay for Recv.
func (r *Raw) CloseStdin() StopReport { return r.p.CloseStdin() }

// Done is closed once the stop sequence has finished (the plugin's exit
// begins one).
func (r *Raw) Done() <-chan struct{} { return r.p.Done() }

// Report returns the stop report once Done is closed (zero before).
func (r *Raw) Report() StopReport { return r.p.Report() }

// Pgid is the plugin's process group id (0 for a Config.Local plugin).
func (r *Raw) Pgid() int { return r.p.Pgid() }

// FirstStderrLine is the first line the plugin wrote to stderr so far.
func (r *Raw) FirstStderrLine() string { return r.p.FirstStderrLine() }

// lineQueue holds a Raw's inbound lines until Recv takes them: unbounded,
// so that the plugin never blocks on a test that reads late.
type lineQueue struct {
	mu    sync.Mutex
	lines [][]byte // nil: a line over 1 MiB
	ended bool
	ready chan struct{} // a token while lines or the end wait
}

func newLineQueue() *lineQueue { return &lineQueue{ready: make(chan struct{}, 1)} }

func (q *lineQueue) push(line []byte, oversize bool) {
	if oversize {
		line = nil
	} else if line == nil {
		line = []byte{}
	}
	q.mu.Lock()
	q.lines = append(q.lines, line)
	q.mu.Unlock()
	q.signal()
}

func (q *lineQueue) end() {
	q.mu.Lock()
	q.ended = true
	q.mu.Unlock()
	q.signal()
}

func (q *lineQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *lineQueue) pop(ctx context.Context) ([]byte, error) {
	for {
		q.mu.Lock()
		if len(q.lines) > 0 {
			l := q.lines[0]
			q.lines = q.lines[1:]
			more := len(q.lines) > 0 || q.ended
			q.mu.Unlock()
			if more {
				q.signal() // for another waiting Recv
			}
			if l == nil {
				return nil, protocol.ErrLineTooLong
			}
			return l, nil
		}
		ended := q.ended
		q.mu.Unlock()
		if ended {
			q.signal()
			return nil, io.EOF
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
