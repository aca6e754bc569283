package ssh

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/mu-org/mu-plugins/internal/outcap"
	"io"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/mu-org/mu-plugins/protocol"
)

// run is one remote process under the wrapper, holding one slot until its
// session ends.
type run struct {
	c       *conn
	sess    *gossh.Session
	until   time.Time
	pg      chan int      // the wrapper's process group, once read (0: none)
	ended   chan struct{} // the session ended (its process is gone)
	waitErr error

	stopOnce sync.Once
	stopped  chan struct{} // a stop finished (or the run ended by itself)
}

// runSpec says what to run and where its streams go. The run must end by
// until (the call's receipt plus its timeoutMs): a slot not found by then
// means nothing started; the remote watchdog gets what is left.
type runSpec struct {
	until  time.Time
	cwd    string
	argv   []string // nil: the script on stdin
	args   []string // with the script on stdin: its positional parameters
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	mark   bool // a Runner's run: runMark on stdout before the command
}

// openSession takes a slot and opens a session on it. An OpenChannelError
// is the server's capacity signal: shrink the semaphore and queue.
func (b *Backend) openSession(ctx context.Context, c *conn, until time.Time) (*gossh.Session, error) {
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	for {
		if err := c.slots.acquire(ctx); err != nil {
			return nil, protocol.NotStarted(err, "no free session on the connection to "+c.r.Alias+" within the call's timeout; nothing started")
		}
		if c.dead() {
			c.slots.release()
			return nil, protocol.NotStarted(nil, "the connection to "+c.r.Alias+" was lost")
		}
		s, err := c.newSession(ctx)
		if err == nil {
			return s, nil
		}
		if errors.Is(err, errAbandoned) {
			return nil, protocol.NotStarted(ctx.Err(), "opening a session on "+c.r.Alias+"; nothing started")
		}
		var oce *gossh.OpenChannelError
		if errors.As(err, &oce) {
			backoff := c.slots.refused()
			b.log.Info("server refused a session; queueing", "host", c.r.Alias, "slots", c.slots.capacity())
			c.slots.release()
			if backoff {
				select {
				case <-ctx.Done():
					return nil, protocol.NotStarted(err, "the server refused every session until the call's timeout; nothing started")
				case <-time.After(50 * time.Millisecond):
				}
			}
			continue
		}
		c.slots.release()
		return nil, protocol.NotStarted(err, "cannot open a session on "+c.r.Alias)
	}
}

// newSession opens a session on a slot already taken, within ctx. Opens
// are serialized per connection: when the server refuses one, every session
// opened before it is counted, so the new capacity is exact. An open that
// ctx gave up on still settles its slot when it completes. On error the
// slot is still the caller's to release, except with errAbandoned.
func (c *conn) newSession(ctx context.Context) (*gossh.Session, error) {
	type opened struct {
		s   *gossh.Session
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		c.openMu.Lock()
		s, err := c.client.NewSession()
		if err == nil {
			c.slots.opened()
		}
		c.openMu.Unlock()
		ch <- opened{s, err}
	}()
	select {
	case o := <-ch:
		return o.s, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.err == nil {
				o.s.Close()
				c.slots.closed()
			} else {
				c.slots.release()
			}
		}()
		return nil, errAbandoned
	}
}

// errAbandoned: ctx ended before the session open completed; the open
// settles its own slot.
var errAbandoned = errors.New("session open abandoned")

// start opens a session and starts spec under it. An error means nothing
// started (retryable).
func (b *Backend) start(ctx context.Context, c *conn, spec runSpec) (*run, error) {
	sess, err := b.openSession(ctx, c, spec.until)
	if err != nil {
		return nil, err
	}
	r := &run{c: c, sess: sess, until: spec.until, pg: make(chan int, 1), ended: make(chan struct{}), stopped: make(chan struct{})}
	stdin, err0 := sess.StdinPipe()
	stdout, err1 := sess.StdoutPipe()
	stderr, err2 := sess.StderrPipe()
	if err := errors.Join(err0, err1, err2); err != nil {
		sess.Close()
		c.slots.closed()
		return nil, protocol.NotStarted(err, "session setup")
	}
	if err := sess.Start(wrapperCommand(time.Until(spec.until), spec.cwd, spec.argv, spec.args, spec.mark)); err != nil {
		sess.Close()
		c.slots.closed()
		return nil, protocol.NotStarted(err, "cannot start the script on "+c.r.Alias)
	}
	b.track(r)
	// Not sess.Stdin: Wait would wait for a stdin that may never end.
	go func() {
		_, _ = io.Copy(stdin, spec.stdin)
		_ = stdin.Close()
	}()
	var drained sync.WaitGroup
	drained.Add(2)
	go func() {
		defer drained.Done()
		_, _ = io.Copy(spec.stdout, stdout)
	}()
	go func() {
		defer drained.Done()
		br := bufio.NewReaderSize(stderr, 4096)
		pg, rest := readPG(br)
		r.pg <- pg
		_, _ = spec.stderr.Write(rest)
		_, _ = io.Copy(spec.stderr, br)
	}()
	go func() {
		drained.Wait()
		r.waitErr = sess.Wait()
		close(r.ended)
		// The process is gone (or the connection is): free the slot.
		sess.Close()
		c.slots.closed()
		b.untrack(r)
		r.stopOnce.Do(func() { close(r.stopped) })
	}()
	return r, nil
}

// outcome waits for the run to end, its timeout, or ctx. exit is nil on
// timeout. An error is unknown-outcome: the script may have run.
func (b *Backend) outcome(ctx context.Context, r *run) (exit *int, err error) {
	t := time.NewTimer(time.Until(r.until))
	defer t.Stop()
	select {
	case <-r.ended:
		return r.exitCode()
	case <-t.C:
		// A run that ended at the same instant is not a timeout.
		select {
		case <-r.ended:
			return r.exitCode()
		default:
		}
		r.stop(b)
		return nil, nil
	case <-ctx.Done():
		r.stop(b)
		return nil, fmt.Errorf("the call ended while the script ran; it is being stopped: %w", ctx.Err()) // unknown-outcome: protocol.ToWire
	}
}

func (r *run) exitCode() (*int, error) {
	err := r.waitErr
	var ee *gossh.ExitError
	switch {
	case err == nil:
		n := 0
		return &n, nil
	case errors.As(err, &ee):
		n := ee.ExitStatus()
		if ee.Signal() != "" && n == 0 {
			n = 128 + signalNumber(ee.Signal())
		}
		return &n, nil
	}
	if r.c.dead() {
		return nil, protocol.Wrap(protocol.UnknownOutcome, err, "the connection to "+r.c.r.Alias+" was lost while the script ran")
	}
	return nil, protocol.Wrap(protocol.UnknownOutcome, err, "the script's session ended without an exit status")
}

// stop kills the run's process group over the control session, in the
// background: "stopping" means it is gone within one grace of the answer.
// The slot stays held until the session ends.
func (r *run) stop(b *Backend) {
	r.stopOnce.Do(func() {
		go func() {
			defer close(r.stopped)
			ctx, cancel := context.WithTimeout(context.Background(), protocol.Grace-500*time.Millisecond)
			defer cancel()
			var pg int
			select {
			case pg = <-r.pg:
				r.pg <- pg
			case <-r.ended:
				return
			case <-ctx.Done():
			}
			if pg == 0 {
				// The wrapper never reported: nothing of the script runs yet,
				// or the watchdog covers it. Closing the channel stops the rest.
				r.sess.Close()
				return
			}
			gone, err := r.c.killGroup(ctx, pg)
			if err != nil || !gone {
				b.log.Warn("stop not proven; the remote watchdog will kill the group", "host", r.c.r.Alias, "error", errString(err))
			}
			select {
			case <-r.ended:
			case <-time.After(2 * time.Second):
				if gone {
					r.sess.Close() // gone, but a setsid escapee may hold the channel's pipes
				}
			}
		}()
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func signalNumber(s string) int {
	switch s {
	case "HUP":
		return 1
	case "INT":
		return 2
	case "QUIT":
		return 3
	case "KILL":
		return 9
	case "PIPE":
		return 13
	case "TERM":
		return 15
	}
	return 0
}

// execScript serves link.exec.
func (b *Backend) execScript(ctx context.Context, call *protocol.Call, p protocol.ExecParams) (protocol.ExecResult, error) {
	if int64(len(p.Script)) > MaxScriptBytes {
		return protocol.ExecResult{}, protocol.Errorf(protocol.Permanent, "script of %d bytes exceeds maxScriptBytes %d", len(p.Script), MaxScriptBytes)
	}
	until := time.Now().Add(protocol.RunTimeout(p.TimeoutMs))
	c, err := b.pool.get(ctx, p.Target.Host.Name)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	out, errb := outcap.New(outcap.ReplyBudget), outcap.New(outcap.ReplyBudget)
	r, err := b.start(ctx, c, runSpec{until: until, cwd: p.Cwd, stdin: scriptStdin(p.Script), stdout: out, stderr: errb})
	if err != nil {
		return protocol.ExecResult{}, err
	}
	exit, err := b.outcome(ctx, r)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	return result(exit, out, errb), nil
}

func result(exit *int, out, errb *outcap.Capture) protocol.ExecResult {
	o, co := out.Bytes()
	e, ce := errb.Bytes()
	so, se, partial := outcap.Fit(o, e, co || ce, outcap.ReplyBudget)
	return protocol.ExecResult{ExitCode: exit, Stdout: so, Stderr: se, Partial: partial}
}
