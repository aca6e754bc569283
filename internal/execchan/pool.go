package execchan

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/mu-org/mu-plugins/internal/outcap"
	"github.com/mu-org/mu-plugins/protocol"
)

// KillWait bounds the wait for a killed run's end marker, once the kill was
// proven: the answer must come inside mu's grace (5 s) after timeoutMs.
const KillWait = 3 * time.Second

// RunnerTimeout bounds one Runner run when ctx sets no deadline: the
// longest tmuxjob run (a watch's batch of looks, a stop's kill rounds) ends
// well inside it.
const RunnerTimeout = 10 * time.Minute

// Backend is what a pool needs from its backend for one host.
type Backend struct {
	// Open starts AgentScript on the host and returns its Session.
	Open func(ctx context.Context) (*Session, error)
	// Stop kills every process marked with a run's mark on the host, from
	// outside the channel (StopScript over a one-off exec), and returns nil
	// only once none is left.
	Stop func(ctx context.Context, mark string) error
	// OpenErr classifies an error of Open for the reply (protocol kinds).
	OpenErr func(err error) error
}

// Pool keeps a host's idle exec channels for reuse, at most max open.
type Pool struct {
	be    Backend
	slots chan struct{}

	mu     sync.Mutex
	idle   []*Session
	open   map[*Session]bool
	closed bool
}

// NewPool is a pool of at most max channels over be.
func NewPool(be Backend, max int) *Pool {
	return &Pool{be: be, slots: make(chan struct{}, max), open: map[*Session]bool{}}
}

// get takes an idle channel or opens one, waiting for a slot.
func (p *Pool) get(ctx context.Context) (*Session, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	for len(p.idle) > 0 {
		s := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if !s.isDead() {
			p.mu.Unlock()
			return s, nil
		}
		delete(p.open, s)
		s.close()
	}
	p.mu.Unlock()
	s, err := p.be.Open(ctx)
	if err != nil {
		<-p.slots
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		s.close()
		<-p.slots
		return nil, context.Canceled
	}
	p.open[s] = true
	p.mu.Unlock()
	return s, nil
}

// put returns a channel after a run; a channel that is not reusable is closed.
func (p *Pool) put(s *Session, reusable bool) {
	s.cur.Store(nil)
	p.mu.Lock()
	if reusable && !p.closed && !s.isDead() {
		p.idle = append(p.idle, s)
	} else {
		delete(p.open, s)
		s.close()
	}
	p.mu.Unlock()
	<-p.slots
}

// Close closes every channel (each loop exits on its stdin's EOF).
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	all := make([]*Session, 0, len(p.open))
	for s := range p.open {
		all = append(all, s)
	}
	p.idle = nil
	p.mu.Unlock()
	for _, s := range all {
		s.close()
	}
}

// Script runs script in cwd over a pooled channel. On timeout it kills the
// run's processes on the host and answers only once none is left, with
// exitCode null.
func (p *Pool) Script(ctx context.Context, script, cwd string, timeout time.Duration) (protocol.ExecResult, error) {
	code, r, err := p.do(ctx, timeout, func(s *Session) (*run, error) { return s.start(script, cwd) })
	if err != nil {
		return protocol.ExecResult{}, err
	}
	out, errs, cut := outcap.Fit(r.out.kept, r.err.kept, false, outcap.ReplyBudget)
	return protocol.ExecResult{ExitCode: code, Stdout: out, Stderr: errs, Partial: cut || r.out.cut() || r.err.cut()}, nil
}

// Run is tmuxjob's Runner over the pool: argv runs from the login
// directory with stdin, marked like a script's run (its leftovers are
// killed when it ends, and a cancelled run is killed before Run returns).
// err is the transport's (or ctx's): the run's end is then unknown.
func (p *Pool) Run(ctx context.Context, argv []string, stdin []byte) ([]byte, []byte, int, error) {
	if len(argv) == 0 {
		return nil, nil, -1, errors.New("empty argv")
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, nil, -1, errors.New("an argument holds a NUL byte")
		}
	}
	sep, err := argvSep(argv)
	if err != nil {
		return nil, nil, -1, err
	}
	code, run, err := p.do(ctx, RunnerTimeout, func(s *Session) (*run, error) { return s.startArgv(argv, sep, stdin, ".") })
	if err != nil {
		return nil, nil, -1, err
	}
	if code == nil {
		return nil, nil, -1, errors.New("the run timed out after " + RunnerTimeout.String())
	}
	if run.out.cut() || run.err.cut() {
		return nil, nil, -1, errors.New("the run's output passed 1 MiB")
	}
	return run.out.kept, run.err.kept, *code, nil
}

// do sends one request (send) on a pooled channel and waits for its end.
// On timeout or cancel it kills the run's processes on the host and
// returns a nil code only once none is left (ctx's error when ctx ended).
func (p *Pool) do(ctx context.Context, timeout time.Duration, send func(*Session) (*run, error)) (*int, *run, error) {
	s, r, err := p.send(ctx, send)
	if err != nil {
		return nil, nil, err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-r.done:
		p.put(s, true)
		code, err := r.exitCode()
		if err != nil {
			return nil, nil, protocol.Wrap(protocol.UnknownOutcome, err, "reading the exit code")
		}
		return &code, r, nil
	case <-s.dead:
		stopErr := p.stopBroken(ctx, r.mark)
		p.put(s, false)
		if stopErr != nil {
			return nil, nil, protocol.Wrap(protocol.UnknownOutcome, errors.Join(s.err, stopErr), "the exec channel broke during the run, and the run could not be proven stopped")
		}
		return nil, nil, protocol.Wrap(protocol.UnknownOutcome, s.err, "the exec channel broke during the run (the run was stopped)")
	case <-timer.C:
	case <-ctx.Done():
	}
	select {
	case <-r.done: // it ended as the timer fired: nothing to stop
		if ctx.Err() == nil {
			p.put(s, true)
			if code, err := r.exitCode(); err == nil {
				return &code, r, nil
			}
			return nil, nil, protocol.Errorf(protocol.UnknownOutcome, "reading the exit code")
		}
	default:
	}
	return p.kill(ctx, s, r)
}

// BrokenStopWait bounds how long a run whose channel broke is tried to be
// stopped while the host does not answer (an API server restarting).
const BrokenStopWait = time.Minute

// stopBroken kills the run of a channel that broke mid-run. The channel's
// loop may be gone with its stream, the run's processes are not (an
// exec's process dies with its stream, not its children), and the host
// may not answer for a while either (the API server restarting): Stop is
// tried again until the kill is proven, ctx ends or BrokenStopWait passed,
// so that no process of the run outlives the answer.
func (p *Pool) stopBroken(ctx context.Context, mark string) error {
	end := time.Now().Add(BrokenStopWait)
	wait := 200 * time.Millisecond
	for {
		err := p.be.Stop(ctx, mark)
		if err == nil || time.Now().Add(wait).After(end) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// send writes the request on a channel, trying a second one when the
// first broke before the request reached its shell.
func (p *Pool) send(ctx context.Context, send func(*Session) (*run, error)) (*Session, *run, error) {
	for attempt := 0; ; attempt++ {
		s, err := p.get(ctx)
		if err != nil {
			return nil, nil, p.be.OpenErr(err)
		}
		r, err := send(s)
		if err == nil {
			return s, r, nil
		}
		p.put(s, false) // nothing ran: the request never fully reached the shell
		if attempt == 1 {
			return nil, nil, protocol.Wrap(protocol.Retryable, err, "writing to the exec channel")
		}
	}
}

// kill stops a run that timed out or whose ctx ended, and waits (KillWait)
// for its end marker.
func (p *Pool) kill(ctx context.Context, s *Session, r *run) (*int, *run, error) {
	stopErr := p.be.Stop(ctx, r.mark)
	wait := time.NewTimer(KillWait)
	defer wait.Stop()
	select {
	case <-r.done:
		p.put(s, true)
	case <-s.dead:
		p.put(s, false)
	case <-wait.C:
		s.close()
		<-s.dead // the reader is gone: the collectors are ours
		p.put(s, false)
	}
	if stopErr != nil {
		return nil, nil, protocol.Wrap(protocol.UnknownOutcome, stopErr, "the timed-out script could not be proven stopped")
	}
	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	return nil, r, nil
}
