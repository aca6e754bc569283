package caller

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mu-org/mu-plugins/protocol"
)

// Every reply is checked against its request (spec "Effects and replay"):
// a reply kind's job.start result and job.lookup found carry the handle and
// the view; an at-start kind's carry baseline with runs 0; a receipt echoes
// the asked msgId; a readStates answer holds the asked agent's reading
// (others are ignored); a send reply's channel is the seam's name and its
// msgId the one sent.
//
// A reply that fails is an unknown outcome (an effect) or an unknown answer
// (a read), never a success. It is NOT a protocol violation: the line was a
// valid message that passed the schema, so the plugin is not broken and the
// invocation keeps it. The error is a *MismatchError, which matches
// ErrMismatch and ErrUnanswered (the package's "written, no valid answer":
// an effect's outcome is unknown, a read is unknown), and neither
// ErrInvalidReply nor ErrBroken.

// ErrMismatch: the reply passed the schema but does not answer its request.
var ErrMismatch = errors.New("reply does not answer its request")

// What a mismatch is about (MismatchError.Rule).
const (
	MismatchHandle   = "handle"   // a reply kind's start or found has no handle
	MismatchView     = "view"     // a reply kind's start or found has no view
	MismatchBaseline = "baseline" // an at-start kind's start or found lacks baseline {runs: 0}
	MismatchMsgID    = "msgId"    // a receipt or delivery reply names another msgId
	MismatchChannel  = "channel"  // a delivery reply names another channel
	MismatchAgent    = "agent"    // a readStates answer lacks the asked agent's reading
	MismatchFound    = "found"    // a lookup's found lacks what its method's found carries
)

// MismatchError is a reply that does not answer its request. It matches
// ErrMismatch and ErrUnanswered.
type MismatchError struct {
	Method string
	Rule   string
	Detail string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s: the reply does not answer the request (%s): %s", e.Method, e.Rule, e.Detail)
}

// Is makes a mismatch an unknown outcome or answer.
func (e *MismatchError) Is(t error) bool { return t == ErrMismatch || t == ErrUnanswered }

func mismatch(method, rule, format string, args ...any) error {
	return &MismatchError{Method: method, Rule: rule, Detail: fmt.Sprintf(format, args...)}
}

// CheckJobStart checks a job.start result against the job seam.
func CheckJobStart(job *protocol.JobSeam, res protocol.JobStartResult) error {
	m := protocol.MethodJobStart.Name
	if job == nil {
		return nil
	}
	if job.Handle == protocol.HandleReply {
		if res.Handle == "" {
			return mismatch(m, MismatchHandle, "a %q kind's start must carry its handle", job.Handle)
		}
		if res.View.Command == "" {
			return mismatch(m, MismatchView, "a %q kind's start must carry its view", job.Handle)
		}
	}
	return checkAtStart(m, job, res.Baseline)
}

// CheckJobFound checks a job.lookup found against the job seam.
func CheckJobFound(job *protocol.JobSeam, f *protocol.JobFound) error {
	m := protocol.MethodJobLookup.Name
	if f == nil || job == nil {
		return nil
	}
	if f.Handle == "" {
		return mismatch(m, MismatchHandle, "found carries no handle")
	}
	if job.Handle == protocol.HandleReply && (f.View == nil || f.View.Command == "") {
		return mismatch(m, MismatchView, "a %q kind's found must carry its view (its whole start reply)", job.Handle)
	}
	return checkAtStart(m, job, f.Baseline)
}

func checkAtStart(m string, job *protocol.JobSeam, b *protocol.Baseline) error {
	if job.FirstTurn != protocol.FirstTurnAtStart {
		return nil
	}
	if b == nil {
		return mismatch(m, MismatchBaseline, "an at-start kind's reply must carry baseline")
	}
	if b.Runs != 0 {
		return mismatch(m, MismatchBaseline, "an at-start kind's baseline must have runs 0, not %d", b.Runs)
	}
	return nil
}

// CheckHostFound checks a host.acquire result or a host.lookup found.
func CheckHostFound(method string, res *protocol.AcquireResult) error {
	if res != nil && res.Handle == "" {
		return mismatch(method, MismatchHandle, "the host carries no handle")
	}
	return nil
}

// CheckReceipt checks that a receipt echoes the asked msgId.
func CheckReceipt(msgID string, rc protocol.Receipt) error {
	if rc.ID != msgID {
		return mismatch(protocol.MethodChannelReceipt.Name, MismatchMsgID, "asked for msgId %q, the receipt is for %q", msgID, rc.ID)
	}
	return nil
}

// CheckReadStates keeps the readings of the asked agents only (others are
// ignored); an asked agent without a reading is an unknown answer.
func CheckReadStates(targets []protocol.AgentName, got map[string]protocol.Reading) (map[string]protocol.Reading, error) {
	out := make(map[string]protocol.Reading, len(targets))
	for _, t := range targets {
		k := protocol.AgentRef{Workstream: t.Workstream, Name: t.Name}.Key()
		r, ok := got[k]
		if !ok {
			return nil, mismatch(protocol.MethodChannelReadStates.Name, MismatchAgent, "no reading for the asked agent %q", k)
		}
		out[k] = r
	}
	return out, nil
}

// CheckSend checks a channel.send, fresh or command reply: its channel is
// the seam's name, and its msgId, when it carries one, the one sent (the
// result's msgId is optional in the spec's table; command sends none).
func CheckSend(method string, ch *protocol.ChannelSeam, msgID string, res protocol.SendResult) error {
	if ch != nil && res.Channel != ch.Name {
		return mismatch(method, MismatchChannel, "the reply names channel %q, the seam is %q", res.Channel, ch.Name)
	}
	if res.MsgID != "" && res.MsgID != msgID {
		return mismatch(method, MismatchMsgID, "sent msgId %q, the reply names %q", msgID, res.MsgID)
	}
	return nil
}

// CheckInterrupt checks a channel.interrupt reply's msgId, when it carries
// one, against the one sent.
func CheckInterrupt(msgID string, res protocol.InterruptResult) error {
	if res.MsgID != "" && res.MsgID != msgID {
		return mismatch(protocol.MethodChannelInterrupt.Name, MismatchMsgID, "sent msgId %q, the reply names %q", msgID, res.MsgID)
	}
	return nil
}

// checkReply checks res, a pointer to method's decoded result, against
// its request's params and the plugin's seams: the checks above, chosen by
// the result's type. A readStates answer is narrowed to the asked agents'.
func checkReply(s protocol.Seams, method string, params, res any) error {
	switch r := res.(type) {
	case *protocol.AcquireResult:
		return CheckHostFound(method, r)
	case *protocol.HostLookupResult:
		return CheckHostFound(method, r.Found)
	case *protocol.JobStartResult:
		return CheckJobStart(s.Job, *r)
	case *protocol.JobLookupResult:
		return CheckJobFound(s.Job, r.Found)
	case *protocol.Receipt:
		return CheckReceipt(msgID(params), *r)
	case *map[string]protocol.Reading:
		p, _ := params.(protocol.ReadStatesParams)
		kept, err := CheckReadStates(p.Targets, *r)
		if err == nil {
			*r = kept
		}
		return err
	case *protocol.SendResult:
		return CheckSend(method, s.Channel, msgID(params), *r)
	case *protocol.InterruptResult:
		return CheckInterrupt(msgID(params), *r)
	}
	return nil
}

// msgID is the msgId a request's params carry ("" for none).
func msgID(params any) string {
	switch p := params.(type) {
	case protocol.ReceiptParams:
		return p.MsgID
	case protocol.SendParams:
		return p.MsgID
	case protocol.FreshParams:
		return p.MsgID
	case protocol.InterruptParams:
		return p.MsgID
	}
	return ""
}

// CheckReply checks a result (already through the schema) against its
// request's params and the plugin's declaration, for any method: Invoke's
// checks, for callers that hold raw JSON (the replay journal). Methods
// without a per-request rule pass.
func CheckReply(decl protocol.InitializeResult, method string, params, result json.RawMessage) error {
	check, ok := rawChecks[method]
	if !ok {
		return nil
	}
	return check(decl.Seams, params, result)
}

// rawChecks are the methods with a reply check, each reading its raw
// params and result as its own types.
var rawChecks = map[string]func(s protocol.Seams, params, result json.RawMessage) error{
	protocol.MethodHostAcquire.Name:       rawCheck(protocol.MethodHostAcquire),
	protocol.MethodHostLookup.Name:        rawCheck(protocol.MethodHostLookup),
	protocol.MethodJobStart.Name:          rawCheck(protocol.MethodJobStart),
	protocol.MethodJobLookup.Name:         rawCheck(protocol.MethodJobLookup),
	protocol.MethodChannelReceipt.Name:    rawCheck(protocol.MethodChannelReceipt),
	protocol.MethodChannelReadStates.Name: rawCheck(protocol.MethodChannelReadStates),
	protocol.MethodChannelSend.Name:       rawCheck(protocol.MethodChannelSend),
	protocol.MethodChannelFresh.Name:      rawCheck(protocol.MethodChannelFresh),
	protocol.MethodChannelCommand.Name:    rawCheck(protocol.MethodChannelCommand),
	protocol.MethodChannelInterrupt.Name:  rawCheck(protocol.MethodChannelInterrupt),
}

func rawCheck[P, R any](m protocol.Method[P, R]) func(protocol.Seams, json.RawMessage, json.RawMessage) error {
	return func(s protocol.Seams, params, result json.RawMessage) error {
		var p P
		var r R
		if err := json.Unmarshal(params, &p); err != nil {
			return mismatch(m.Name, "decode", "%v", err)
		}
		if err := json.Unmarshal(result, &r); err != nil {
			return mismatch(m.Name, "decode", "%v", err)
		}
		return checkReply(s, m.Name, p, &r)
	}
}
