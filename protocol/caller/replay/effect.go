package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// Effect writes an effect's intent, sends it once (no retry: a retryable
// error is a definite answer, and the caller may run Effect again) and
// deletes the intent on a definite answer. key is the effect's key; ""
// takes the params' key (host and job effects) or msgId (deliveries), and
// one of them is required.
//
// It returns the result on success (already checked against the request:
// caller.CheckReply). On a definite failure it returns the error and a nil
// intent. When the outcome is unknown (the call went unanswered, its answer
// broke the protocol or did not answer the request, or the plugin answered
// unknown-outcome) it returns the error and the intent, which stays in the
// journal for Resolve. A call that names a recorded job or host should run
// under caller.ExpectInstance.
func (j *Journal) Effect(ctx context.Context, p *caller.Plugin, method, key string, params any) (json.RawMessage, *Intent, error) {
	if !protocol.IsEffect(method) {
		return nil, nil, fmt.Errorf("replay: %s is not an effect", method)
	}
	r, err := caller.NewRequest(method, params)
	if err != nil {
		return nil, nil, &caller.NotSentError{Method: method, Cause: err}
	}
	raw := r.Params(0)
	f, err := readParams(raw)
	if err != nil {
		return nil, nil, &caller.NotSentError{Method: method, Cause: err}
	}
	if key == "" {
		key = effectKey(method, f)
	}
	if key == "" {
		return nil, nil, &caller.NotSentError{Method: method, Cause: errors.New("replay: an effect needs a key (its params' key or msgId, or one given)")}
	}
	decl := p.Declaration()
	in := &Intent{
		ID: intentID(decl.Plugin.Name, decl.Instance, method, key), Method: method, Key: key,
		Params: raw, SHA256: sha(raw), Plugin: decl.Plugin.Name, Instance: decl.Instance,
		Pgid: p.Pgid(), WriterPID: os.Getpid(), Invocation: j.inv, WrittenAt: j.now().UnixMilli(),
	}
	if delivery(method) && f.Target.Agent != nil {
		in.Agent = f.Target.Agent.Key()
	}
	release, err := j.hold(in.ID)
	if err != nil {
		return nil, nil, &caller.NotSentError{Method: method, Cause: err}
	}
	defer release()
	if _, err := j.Load(in.ID); err == nil {
		return nil, nil, &caller.NotSentError{Method: method, Cause: fmt.Errorf("%w: key %q", ErrUnresolved, key)}
	}
	return j.send(ctx, p, r, in, true)
}

// ErrUnresolved: Effect found an intent of the same effect still in the
// journal; it sends nothing until Resolve settles it.
var ErrUnresolved = errors.New("replay: an earlier send of this effect is unresolved: resolve it first")

// send records the send's deadline in the intent, sends r once and judges
// the answer. The intent's lock is held by the caller. fresh: the intent
// records this send only, so any definite answer deletes it; a resend
// (Resolve) deletes it only on a checked success, since an earlier send's
// outcome is still open otherwise.
func (j *Journal) send(ctx context.Context, p *caller.Plugin, r *caller.Request, in *Intent, fresh bool) (json.RawMessage, *Intent, error) {
	// The call's deadline bounds its write (and, with one grace, the
	// plugin's life): SentBy records it before anything is written. ctx is
	// held to it, so a Send that starts a moment later still writes nothing
	// past SentBy.
	timeout := p.Timeout(r)
	by := j.now().Add(timeout)
	in.SentBy = by.UnixMilli()
	if err := j.write(in, fresh); err != nil {
		return nil, nil, &caller.NotSentError{Method: in.Method, Cause: fmt.Errorf("replay: writing the intent: %w", err)}
	}
	cctx, cancel := context.WithDeadline(ctx, by)
	defer cancel()
	res, err := p.Send(cctx, r, timeout)
	if err == nil {
		err = caller.CheckReply(p.Declaration(), in.Method, in.Params, res)
	}
	if err == nil || (fresh && definite(err)) {
		if derr := j.Delete(in.ID); derr != nil && err == nil {
			return res, nil, fmt.Errorf("replay: deleting the intent of a definite answer: %w", derr)
		}
		if err != nil {
			return nil, nil, err
		}
		return res, nil, nil
	}
	return nil, in, err
}

// definite reports whether an answer settles the effect: a success, an
// error reply other than unknown-outcome (nothing happened), or a call
// never written.
func definite(err error) bool {
	if err == nil || errors.Is(err, caller.ErrNotSent) {
		return true
	}
	var re *caller.RemoteError
	return errors.As(err, &re) && re.Kind != protocol.UnknownOutcome
}
