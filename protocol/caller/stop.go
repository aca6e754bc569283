package caller

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// stopWriteBudget bounds each write of the stop sequence (and a call's
// $/cancel): a plugin that stopped reading its stdin cannot hold the stop.
const stopWriteBudget = time.Second

// beginStop begins the stop sequence once: every pending call fails
// unanswered (cause), every open watch ends, and no request is sent again.
func (p *Plugin) beginStop(cause error) { p.beginStopMode(cause, false) }

// beginStopMode is beginStop; eofOnly skips the $/cancel and shutdown
// messages (CloseStdin).
func (p *Plugin) beginStopMode(cause error, eofOnly bool) {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		p.stopping = true
		p.stopCause = cause
		var ids []int64
		for id, c := range p.st.pending {
			if c.cancelled {
				continue
			}
			c.cancelled = true
			c.resolve(outcome{err: &UnansweredError{Method: c.method, ID: id, Cause: cause}})
			ids = append(ids, id)
		}
		for _, w := range p.st.watches {
			w.end(nil)
		}
		p.mu.Unlock()
		slices.Sort(ids)
		close(p.stopStarted)
		go p.stopSequence(cause, ids, eofOnly)
	})
}

// stopSequence is the spec's one stop: $/cancel for each pending call,
// shutdown, close stdin, wait at most the grace for the group to empty,
// kill the group.
func (p *Plugin) stopSequence(cause error, ids []int64, eofOnly bool) {
	rep := StopReport{Cause: cause}
	if eofOnly && p.lockWriteForStop() {
		p.stdinClosed = true
		p.stdin.Close()
		<-p.wsem
	} else if !eofOnly && p.lockWriteForStop() {
		for _, id := range ids {
			_ = p.writeLocked(cancelLine(strconv.FormatInt(id, 10), ""), time.Now().Add(stopWriteBudget))
		}
		p.mu.Lock()
		p.nextID++
		id := p.nextID
		// Its answer is checked and ignored.
		sd := &pendingCall{id: id, method: protocol.MethodShutdown.Name, cancelled: true, resolved: true}
		p.st.pending[id] = sd
		p.mu.Unlock()
		line := []byte(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":"shutdown"}`)
		_ = p.writeLocked(line, time.Now().Add(stopWriteBudget))
		p.stdinClosed = true
		p.stdin.Close()
		<-p.wsem
	}
	closed := time.Now()
	grace := time.NewTimer(p.cfg.StopGrace)
	select {
	case <-p.exited:
		grace.Stop()
		rep.Graceful = p.leftover == 0
	case <-grace.C:
		if p.pgid > 0 { // a Local plugin cannot be killed: it is let run
			rep.Killed = killGroup(p.pgid)
			select {
			case <-p.exited:
			case <-time.After(10 * time.Second): // SIGKILL cannot be ignored; bound the wait anyway
			}
		}
	}
	select {
	case <-p.exited: // leftover and exitErr are set before it closes
		rep.LeftAfterLeader = p.leftover
		rep.Killed += p.leftover
		rep.Exit = p.exitErr
	default:
	}
	if p.pgid > 0 {
		rep.GroupEmpty = waitGroupEmpty(p.pgid, 5*time.Second)
	} else {
		rep.GroupEmpty = isClosed(p.exited)
	}
	rep.Waited = time.Since(closed)
	// Every writer of stdout and stderr is gone: the readers see EOF.
	// Bound the wait anyway (a process outside the group could hold them).
	until := time.Now().Add(2 * time.Second)
	select {
	case <-p.readerDone:
	case <-time.After(time.Until(until)):
		p.stdout.Close()
		<-p.readerDone
	}
	select {
	case <-p.stderrDone:
	case <-time.After(time.Until(until)):
	}
	p.stdout.Close()
	p.report = rep
	close(p.stopped)
}

func waitGroupEmpty(pgid int, bound time.Duration) bool {
	end := time.Now().Add(bound)
	for {
		if len(groupMembers(pgid)) == 0 {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lockWriteForStop takes the write lock for the stop sequence. A writer
// blocked on a plugin that does not read is cut off after a bound. It
// reports false when stdin is already closed.
func (p *Plugin) lockWriteForStop() bool {
	select {
	case p.wsem <- struct{}{}:
	case <-time.After(stopWriteBudget):
		_ = p.stdin.SetWriteDeadline(time.Now()) // unblock the writer
		p.wsem <- struct{}{}
	}
	if p.stdinClosed {
		<-p.wsem
		return false
	}
	return true
}

// lockWrite takes the write lock for a call: it gives up when ctx ends or
// the stop begins.
func (p *Plugin) lockWrite(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-p.stopStarted:
		return p.stoppedCause()
	default:
	}
	select {
	case p.wsem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.stopStarted:
		return p.stoppedCause()
	}
}

func (p *Plugin) unlockWrite() { <-p.wsem }

// stoppedCause is why no request is sent any more.
func (p *Plugin) stoppedCause() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broken != nil {
		return p.broken
	}
	if p.stopCause == nil || errors.Is(p.stopCause, ErrStopped) {
		return ErrStopped
	}
	return &stoppedError{p.stopCause}
}

// stoppedError: the plugin was stopped by cause.
type stoppedError struct{ cause error }

func (e *stoppedError) Error() string   { return "plugin stopped: " + e.cause.Error() }
func (e *stoppedError) Is(t error) bool { return t == ErrStopped }
func (e *stoppedError) Unwrap() error   { return e.cause }

// writeLocked writes one line; the caller holds the write lock. The write
// gives up at deadline (zero: never). It returns how many bytes went out.
func (p *Plugin) writeLocked(line []byte, deadline time.Time) error {
	_, err := p.writeN(line, deadline)
	return err
}

func (p *Plugin) writeN(line []byte, deadline time.Time) (int, error) {
	if p.stdinClosed {
		return 0, os.ErrClosed
	}
	p.event(Event{Dir: Out, Line: line})
	_ = p.stdin.SetWriteDeadline(deadline)
	buf := make([]byte, len(line)+1)
	copy(buf, line)
	buf[len(line)] = '\n'
	n, err := p.stdin.Write(buf)
	if err != nil {
		p.event(Event{Dir: Out, Note: "write failed after " + strconv.Itoa(n) + " bytes: " + err.Error()})
	}
	return n, err
}

// cancelLine renders $/cancel for a call id (JSON text) or a watch id.
func cancelLine(id, watchID string) []byte {
	if watchID != "" {
		q, _ := marshalString(watchID)
		return []byte(`{"jsonrpc":"2.0","method":"$/cancel","params":{"watchId":` + q + `}}`)
	}
	return []byte(`{"jsonrpc":"2.0","method":"$/cancel","params":{"id":` + id + `}}`)
}

// writeCancel sends $/cancel for a call or a watch, bounded; it is skipped
// once stdin is closed.
func (p *Plugin) writeCancel(id, watchID string) {
	select {
	case p.wsem <- struct{}{}:
	case <-time.After(stopWriteBudget):
		return
	}
	defer p.unlockWrite()
	_ = p.writeLocked(cancelLine(id, watchID), time.Now().Add(stopWriteBudget))
}
