package caller

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// ErrWatchEnded: the watch ended without its notification (Cancel, or the
// plugin stopped).
var ErrWatchEnded = errors.New("watch ended without a notification")

// Watch is a channel.watch the plugin answered: Result is its reply, and
// the plugin then sends exactly one notification, which C delivers.
type Watch struct {
	ID     string
	Result protocol.WatchResult
	Raw    json.RawMessage // the reply's result as sent

	p  *Plugin
	st *watchState
}

// Watch sends channel.watch and returns the open watch. timeout bounds the
// reply only (zero: Config.ReadTimeout); the watch then lives until its
// notification, Cancel, or the plugin's stop.
func (p *Plugin) Watch(ctx context.Context, params protocol.WatchParams, timeout time.Duration) (*Watch, error) {
	r, err := NewRequest(protocol.MethodChannelWatch.Name, params)
	if err != nil {
		return nil, &NotSentError{Method: protocol.MethodChannelWatch.Name, Cause: err}
	}
	o, err := p.do(ctx, r, timeout)
	if err != nil {
		return nil, err
	}
	w := &Watch{Raw: o.result, p: p, st: o.watch}
	if err := json.Unmarshal(o.result, &w.Result); err != nil {
		return nil, err
	}
	w.ID = w.Result.WatchID
	return w, nil
}

// C delivers the watch's one notification, then is closed. It is closed
// without a value when the watch is cancelled or the plugin stops first.
func (w *Watch) C() <-chan Notification { return w.st.ch }

// Wait waits for the notification. It returns ErrWatchEnded (wrapping the
// plugin's stop cause, if any) when the watch ended without one.
func (w *Watch) Wait(ctx context.Context) (Notification, error) {
	select {
	case n, ok := <-w.st.ch:
		if ok {
			return n, nil
		}
		select {
		case <-w.p.stopStarted:
			return Notification{}, errors.Join(ErrWatchEnded, w.p.stoppedCause())
		default:
			return Notification{}, ErrWatchEnded
		}
	case <-ctx.Done():
		return Notification{}, ctx.Err()
	}
}

// Cancel ends the watch early: mu sends $/cancel {watchId}. A notification
// that crosses it is ignored. It is a no-op once the watch has ended.
func (w *Watch) Cancel() {
	w.p.mu.Lock()
	live := !w.st.cancelled && !w.st.notified && !w.p.stopping
	if live {
		w.st.end(nil)
	}
	w.p.mu.Unlock()
	if live {
		w.p.writeCancel("", w.ID)
	}
}
