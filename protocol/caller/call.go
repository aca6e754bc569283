package caller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// Call sends method with params and waits for the answer, retrying a
// retryable error with the same params (Config.Retries times, default 3).
// timeout is the call's whole budget: its deadline is now + timeout; zero
// means the default (see Timeout). params are marshalled once (see
// NewRequest).
//
// Past the deadline, or when ctx ends after the request was written, the
// caller sends $/cancel for it and begins the stop sequence; the call fails
// with an *UnansweredError. A call whose ctx ended before it was written is
// never sent: a *NotSentError, and the plugin keeps running. An error reply
// is a *RemoteError; an answer that breaks the protocol an
// *InvalidReplyError (and the plugin is broken).
func (p *Plugin) Call(ctx context.Context, method string, params any, timeout time.Duration) (json.RawMessage, error) {
	r, err := NewRequest(method, params)
	if err != nil {
		return nil, &NotSentError{Method: method, Cause: err}
	}
	return p.Do(ctx, r, timeout)
}

// Do is Call for a prepared Request: retries and resends write the same
// params bytes.
func (p *Plugin) Do(ctx context.Context, r *Request, timeout time.Duration) (json.RawMessage, error) {
	o, err := p.do(ctx, r, timeout)
	return o.result, err
}

func (p *Plugin) do(ctx context.Context, r *Request, timeout time.Duration) (outcome, error) {
	for attempt := 0; ; attempt++ {
		o, err := p.send(ctx, r, timeout)
		var re *RemoteError
		if !errors.As(err, &re) || !re.Retryable() || attempt >= p.cfg.Retries {
			return o, err
		}
		t := time.NewTimer(p.cfg.RetryBackoff * time.Duration(attempt+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return o, err
		case <-t.C:
		}
	}
}

// Send sends r once (no retry) and waits for its answer. Sending the same
// r again is a resend: identical params but deadline, a new id.
func (p *Plugin) Send(ctx context.Context, r *Request, timeout time.Duration) (json.RawMessage, error) {
	o, err := p.send(ctx, r, timeout)
	return o.result, err
}

// Timeout is the default budget of a call to r: link.exec, link.fetch and
// link.push take their timeoutMs (20 s when absent) plus one grace (5 s);
// every other call Config.ReadTimeout (10 s).
func (p *Plugin) Timeout(r *Request) time.Duration {
	if r.Method == protocol.MethodInitialize.Name {
		return p.cfg.HandshakeTimeout
	}
	if protocol.IsRun(r.Method) {
		return protocol.RunTimeout(r.timeoutMs) + protocol.Grace
	}
	return p.cfg.ReadTimeout
}

// send sends r once and waits for its answer; a "stopping" link's
// timed-out run is then held one grace (holdTimedOutRun).
func (p *Plugin) send(ctx context.Context, r *Request, timeout time.Duration) (outcome, error) {
	o, err := p.sendOnce(ctx, r, timeout)
	if err == nil {
		p.holdTimedOutRun(ctx, r.Method, o.result)
	}
	return o, err
}

func (p *Plugin) sendOnce(ctx context.Context, r *Request, timeout time.Duration) (outcome, error) {
	notSent := func(cause error) (outcome, error) {
		return outcome{}, &NotSentError{Method: r.Method, Cause: cause}
	}
	if err := ctx.Err(); err != nil {
		return notSent(err)
	}
	if err := p.instanceRefusal(ctx, r.Method); err != nil {
		return outcome{}, err
	}
	if timeout <= 0 {
		timeout = p.Timeout(r)
	}
	if !r.checked && r.raw == nil && !p.cfg.SkipParamsCheck {
		if err := schemaParams(r.Method, r.Params(time.Now().UnixMilli())); err != nil {
			return notSent(fmt.Errorf("params do not match the schema: %w", err))
		}
		r.checked = true
	}
	if err := p.lockWrite(ctx); err != nil {
		return notSent(err)
	}
	// The cancel may have come while waiting for the lock: still unsent.
	if err := ctx.Err(); err != nil {
		p.unlockWrite()
		return notSent(err)
	}
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		p.unlockWrite()
		return notSent(p.stoppedCause())
	}
	p.nextID++
	id := p.nextID
	deadline := time.Now().Add(timeout)
	pc := &pendingCall{id: id, method: r.Method, done: make(chan outcome, 1)}
	p.st.pending[id] = pc
	p.mu.Unlock()

	line := r.Line(id, deadline.UnixMilli())
	if len(line) > protocol.MaxLine {
		p.mu.Lock()
		delete(p.st.pending, id)
		p.mu.Unlock()
		p.unlockWrite()
		return notSent(fmt.Errorf("the request is %d bytes; a message is at most 1 MiB", len(line)))
	}
	n, werr := p.writeCall(ctx, line, deadline)
	p.unlockWrite()
	if werr != nil {
		cause := werr
		if ctx.Err() != nil {
			cause = ctx.Err()
		} else if !time.Now().Before(deadline) {
			cause = ErrDeadline
		}
		p.mu.Lock()
		if n == 0 {
			// Nothing reached the pipe: a definite refusal.
			delete(p.st.pending, id)
			p.mu.Unlock()
			if errors.Is(cause, ErrDeadline) {
				p.beginStop(fmt.Errorf("%s: the plugin did not read its stdin: %w", r.Method, ErrDeadline))
			}
			return notSent(cause)
		}
		// A torn line: stdin is corrupt from here on.
		uerr := &UnansweredError{Method: r.Method, ID: id, Cause: cause}
		pc.cancelled = true
		pc.resolve(outcome{err: uerr})
		p.mu.Unlock()
		p.beginStop(fmt.Errorf("%s: request cut after %d bytes: %w", r.Method, n, cause))
		return outcome{}, uerr
	}
	return p.await(ctx, r.Method, pc, deadline)
}

// holdTimedOutRun: a "stopping" link's timed-out run stops asynchronously,
// within one grace after the answer; mu waits that grace out before it
// returns the run (and counts the link stopped). A "stopped" link's
// processes are gone at the answer; an "unknown" one's may never be.
func (p *Plugin) holdTimedOutRun(ctx context.Context, method string, result json.RawMessage) {
	link := p.decl.Seams.Link
	if !protocol.IsRun(method) || link == nil || link.RemoteOnTimeout != protocol.RemoteStopping {
		return
	}
	var run struct {
		ExitCode *int `json:"exitCode"`
	}
	if json.Unmarshal(result, &run) != nil || run.ExitCode != nil {
		return
	}
	p.cfg.waitGrace(ctx, p.cfg.RunGrace)
}

// writeCall writes a request line. A plugin that does not read its stdin
// cannot hold the call past its deadline or its ctx.
func (p *Plugin) writeCall(ctx context.Context, line []byte, deadline time.Time) (int, error) {
	kicked := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = p.stdin.SetWriteDeadline(time.Now())
		close(kicked)
	})
	n, err := p.writeN(line, deadline)
	if !stop() {
		<-kicked // the kick ran: let it finish before the next writer
	}
	return n, err
}

// await waits for the answer to a written call, its deadline or its ctx.
func (p *Plugin) await(ctx context.Context, method string, pc *pendingCall, deadline time.Time) (outcome, error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var cause error
	select {
	case o := <-pc.done:
		return o, o.err
	case <-ctx.Done():
		cause = ctx.Err()
	case <-timer.C:
		cause = ErrDeadline
	}
	p.mu.Lock()
	if pc.resolved { // the answer (or the stop) came first
		p.mu.Unlock()
		o := <-pc.done
		return o, o.err
	}
	uerr := &UnansweredError{Method: method, ID: pc.id, Cause: cause}
	pc.cancelled = true
	pc.resolve(outcome{err: uerr})
	p.mu.Unlock()
	p.writeCancel(strconv.FormatInt(pc.id, 10), "")
	p.beginStop(fmt.Errorf("%s (id %d): %w", method, pc.id, cause))
	return outcome{}, uerr
}
