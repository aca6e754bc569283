package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// State is how a resolution ended.
type State string

const (
	// Found: the effect happened; Outcome.Result is its result (a lookup's
	// found, an accepted receipt, a deduped repeat's first result).
	Found State = "found"
	// Done: an idempotent effect (job.stop, host.release) was reissued and
	// answered.
	Done State = "done"
	// None: proven not to have happened, and (fenced, or past inFlightMs)
	// it never will. The caller may roll its records back.
	None State = "none"
	// Unresolved: nothing is known yet; the intent stays. Reason says why.
	Unresolved State = "unresolved"
)

// Why a resolution is Unresolved (or what a None rests on).
const (
	ReasonBusy          = "busy"         // another Effect or Resolve holds the intent
	ReasonWriterAlive   = "writer-alive" // the invocation that wrote it still lives (this one included)
	ReasonStopChanged   = caller.RuleStopChanged
	ReasonOtherPlugin   = "other-plugin"   // the plugin is not the one it was recorded under
	ReasonUndeclared    = "undeclared"     // the plugin no longer declares the seam
	ReasonPending       = "pending"        // the lookup says the effect is still being made
	ReasonUnknown       = "unknown"        // the lookup answered unknown
	ReasonPluginAlive   = "plugin-alive"   // none, but the recorded process group still holds a process
	ReasonInFlight      = "in-flight"      // none, unfenced, and inFlightMs has not passed (or is not declared)
	ReasonFileHandle    = "file-handle"    // none, for a handle "file" kind: never acted on
	ReasonWindowPassed  = "window-passed"  // no lookup, and a repeat would land outside the dedupe window
	ReasonNoWay         = "no-resolution"  // the declaration offers no way to ask (no lookup, no exact dedupe/receipt)
	ReasonNotAccepted   = "not-accepted"   // the receipt is not accepted (its state in Outcome.Result)
	ReasonNoMsgID       = "no-msgid"       // a delivery without a msgId: neither asked nor deduped
	ReasonNewerDelivery = "newer-delivery" // a newer delivery to the agent was written: no resend
	ReasonCall          = "call-failed"    // the call failed: Outcome.Err

	ReasonFenced        = "fenced"         // None: the lookup was fenced
	ReasonInFlightSpent = "in-flight-over" // None: inFlightMs passed
)

// Outcome is a resolution.
type Outcome struct {
	State  State
	Reason string
	Result json.RawMessage
	Err    error
}

func unresolved(reason string, err error) Outcome {
	return Outcome{State: Unresolved, Reason: reason, Err: err}
}

func (o Outcome) String() string {
	s := string(o.State)
	if o.Reason != "" {
		s += " (" + o.Reason + ")"
	}
	if o.Err != nil {
		s += ": " + o.Err.Error()
	}
	return s
}

// Resolve settles an intent left by a crash, a timeout or an
// unknown-outcome, by the spec's rules (see the package doc), through p,
// a plugin started for this invocation. A Found, Done or None outcome
// deletes the intent; an Unresolved one keeps it. The error is for the
// journal itself (ErrNoIntent when it is gone); every plugin answer is in
// the outcome.
func (j *Journal) Resolve(ctx context.Context, p *caller.Plugin, in *Intent) (Outcome, error) {
	release, err := j.hold(in.ID)
	if errors.Is(err, ErrBusy) {
		return unresolved(ReasonBusy, err), nil
	}
	if err != nil {
		return Outcome{}, err
	}
	defer release()
	cur, err := j.Load(in.ID) // it may have been settled meanwhile
	if err != nil {
		return Outcome{}, err
	}
	in = cur
	if alive, why, err := j.writerLives(in); err != nil {
		return Outcome{}, err
	} else if alive {
		return unresolved(ReasonWriterAlive, errors.New(why)), nil
	}
	decl := p.Declaration()
	if decl.Plugin.Name != in.Plugin {
		return unresolved(ReasonOtherPlugin, fmt.Errorf("recorded under plugin %q, asked %q: nothing sent", in.Plugin, decl.Plugin.Name)), nil
	}
	if decl.Instance != in.Instance {
		return unresolved(ReasonStopChanged, p.CheckInstance(in.Method, in.Instance)), nil
	}
	ctx = caller.ExpectInstance(ctx, in.Instance)
	var out Outcome
	switch {
	case in.Method == protocol.MethodJobStop.Name || in.Method == protocol.MethodHostRelease.Name:
		out = j.reissue(ctx, p, in)
	case in.Method == protocol.MethodJobStart.Name || in.Method == protocol.MethodHostAcquire.Name:
		out = j.resolveStart(ctx, p, in)
	case delivery(in.Method):
		out = j.resolveDelivery(ctx, p, in)
	default:
		return Outcome{}, fmt.Errorf("replay: %s is not an effect", in.Method)
	}
	if out.State != Unresolved {
		if err := j.Delete(in.ID); err != nil {
			return out, err
		}
	}
	return out, nil
}

// resend sends the intent's exact params again (a new deadline only).
func (j *Journal) resend(ctx context.Context, p *caller.Plugin, in *Intent) (json.RawMessage, error) {
	r, err := caller.NewRequest(in.Method, in.Params)
	if err != nil {
		return nil, err
	}
	res, _, err := j.send(ctx, p, r, in, false)
	return res, err
}

// reissue: job.stop and host.release are idempotent.
func (j *Journal) reissue(ctx context.Context, p *caller.Plugin, in *Intent) Outcome {
	if _, err := j.resend(ctx, p, in); err != nil {
		return unresolved(ReasonCall, err)
	}
	return Outcome{State: Done}
}

// resolveStart: job.start and host.acquire.
func (j *Journal) resolveStart(ctx context.Context, p *caller.Plugin, in *Intent) Outcome {
	decl := p.Declaration()
	var caps protocol.KeyCaps
	lookup := protocol.MethodHostLookup.Name
	switch {
	case in.Method == protocol.MethodHostAcquire.Name && decl.Seams.Host != nil:
		caps = decl.Seams.Host.Acquire
	case in.Method == protocol.MethodJobStart.Name && decl.Seams.Job != nil:
		caps = decl.Seams.Job.Start
		lookup = protocol.MethodJobLookup.Name
	default:
		return unresolved(ReasonUndeclared, fmt.Errorf("the plugin declares no seam for %s", in.Method))
	}
	if caps.Lookup {
		return j.lookup(ctx, p, in, lookup, caps)
	}
	if d := caps.Dedupe; d != nil && d.Exact {
		// The repeat must land inside the window counted from the first
		// send (no earlier than WrittenAt); it lands by its deadline.
		r, err := caller.NewRequest(in.Method, in.Params)
		if err != nil {
			return unresolved(ReasonCall, err)
		}
		if j.now().Add(p.Timeout(r)).UnixMilli() > in.WrittenAt+d.WindowMs {
			return unresolved(ReasonWindowPassed, nil)
		}
		res, err := j.resend(ctx, p, in)
		if err != nil {
			return unresolved(ReasonCall, err)
		}
		return Outcome{State: Found, Result: res}
	}
	return unresolved(ReasonNoWay, nil)
}

func (j *Journal) lookup(ctx context.Context, p *caller.Plugin, in *Intent, method string, caps protocol.KeyCaps) Outcome {
	f, err := readParams(in.Params)
	if err != nil {
		return unresolved(ReasonCall, err)
	}
	params := protocol.LookupParams{Base: protocol.Base{Target: f.Target}, Key: in.Key, Fence: caps.FenceKey}
	raw, err := p.Call(ctx, method, params, 0)
	if err == nil {
		pb, _ := json.Marshal(params)
		err = caller.CheckReply(p.Declaration(), method, pb, raw)
	}
	if err != nil {
		return unresolved(ReasonCall, err)
	}
	var r struct {
		Found   json.RawMessage `json:"found"`
		Pending bool            `json:"pending"`
		None    bool            `json:"none"`
		Unknown string          `json:"unknown"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return unresolved(ReasonCall, err)
	}
	switch {
	case len(r.Found) > 0 && string(r.Found) != "null":
		return Outcome{State: Found, Result: r.Found}
	case r.Pending:
		return unresolved(ReasonPending, nil)
	case r.None:
		return j.judgeNone(p, in, caps)
	}
	return unresolved(ReasonUnknown, fmt.Errorf("lookup: unknown: %s", r.Unknown))
}

// judgeNone: a none counts only once the writer and the plugin process it
// called are proven gone, and the lookup was fenced or inFlightMs passed;
// never for a handle "file" kind.
func (j *Journal) judgeNone(p *caller.Plugin, in *Intent, caps protocol.KeyCaps) Outcome {
	if job := p.Declaration().Seams.Job; in.Method == protocol.MethodJobStart.Name && job != nil && job.Handle == protocol.HandleFile {
		return unresolved(ReasonFileHandle, nil)
	}
	// The writer: another process was refused up front; this one holds
	// the intent's lock, so no send of it is in flight here.
	if !caller.GroupEmpty(in.Pgid) {
		return unresolved(ReasonPluginAlive, fmt.Errorf("process group %d still holds a process", in.Pgid))
	}
	if caps.FenceKey {
		return Outcome{State: None, Reason: ReasonFenced}
	}
	// The plugin could act on the request until its deadline plus one
	// grace (past that, the caller's stop sequence kills it).
	if ms := caps.InFlightMs; ms != nil && j.now().UnixMilli() >= in.SentBy+protocol.Grace.Milliseconds()+*ms {
		return Outcome{State: None, Reason: ReasonInFlightSpent}
	}
	return unresolved(ReasonInFlight, nil)
}

// resolveDelivery: a receipt when exact, else a deduped resend while no
// newer delivery to the agent was written.
func (j *Journal) resolveDelivery(ctx context.Context, p *caller.Plugin, in *Intent) Outcome {
	ch := p.Declaration().Seams.Channel
	if ch == nil {
		return unresolved(ReasonUndeclared, errors.New("the plugin declares no channel"))
	}
	f, err := readParams(in.Params)
	if err != nil {
		return unresolved(ReasonCall, err)
	}
	if f.MsgID == "" {
		return unresolved(ReasonNoMsgID, nil)
	}
	if ch.Caps.Receipt == "exact" {
		rc, err := caller.Invoke(ctx, p, protocol.MethodChannelReceipt, protocol.ReceiptParams{Base: protocol.Base{Target: f.Target}, MsgID: f.MsgID})
		if err != nil {
			return unresolved(ReasonCall, err)
		}
		b, _ := json.Marshal(rc)
		if rc.State != protocol.ReceiptAccepted {
			return Outcome{State: Unresolved, Reason: ReasonNotAccepted, Result: b}
		}
		return Outcome{State: Found, Result: b}
	}
	if ch.Caps.Dedupe != "exact" {
		return unresolved(ReasonNoWay, nil)
	}
	newest, err := j.Newest(in.Plugin, in.Agent)
	if err != nil {
		return unresolved(ReasonCall, err)
	}
	if newest != in.ID {
		return unresolved(ReasonNewerDelivery, nil)
	}
	res, err := j.resend(ctx, p, in)
	if err != nil {
		return unresolved(ReasonCall, err)
	}
	return Outcome{State: Found, Result: res}
}
