package tmuxjob

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// delivery is one delivery as deliver.sh takes it.
type delivery struct {
	method string
	kind   string // send fresh command interrupt answer
	msgID  string
	text   string
	mode   string
	name   string
	expect string
	force  bool
}

// accepted is a delivery the host accepted (now or before: dup).
type accepted struct {
	seq      int64
	baseline *int64
	inc      string
	state    string // the turn state when it was accepted (not for a dup)
	dup      bool
	nudged   bool
}

func (j *Jobs) deliver(ctx context.Context, b protocol.Base, d delivery) (accepted, error) {
	key, err := jobKey(d.method, b)
	if err != nil {
		return accepted{}, err
	}
	if !noNUL(d.msgID) || !noNUL(d.name) || !noNUL(d.expect) {
		return accepted{}, protocol.Errorf(protocol.Permanent, "%s: a NUL byte in msgId, name or expectIncarnation", d.method)
	}
	var h, window string
	switch d.kind {
	case "command":
		// A command carries no msgId: its resend is the same command again.
		h = deliveryHash("command", d.name, d.text)
		window = strconv.FormatInt(j.opts.CommandWindow.Milliseconds(), 10)
	case "answer":
		// An answer carries no msgId either: the same keys again for the
		// same dialog (or, with none pending, within the window) are its
		// resend.
		h = deliveryHash("answer", d.text)
		window = strconv.FormatInt(j.opts.CommandWindow.Milliseconds(), 10)
	default:
		if d.msgID == "" {
			return accepted{}, protocol.Errorf(protocol.Permanent, "%s: msgId is required", d.method)
		}
		h = deliveryHash("msg", d.msgID)
		window = "0"
	}
	force := "0"
	if d.force {
		force = "1"
	}
	args := []string{d.kind, h, strconv.FormatInt(j.now(), 10), d.msgID, d.mode, d.name, d.expect, force, window, j.opts.Nudge, readIn(d.text)}
	args = append(args, j.opts.InterruptKeys...)
	fs := []field{{"msgId", d.msgID}, {"name", d.name}, {"expectIncarnation", d.expect}}
	if err := fieldsFit(d.method, fs...); err != nil {
		return accepted{}, err
	}
	o, err := j.run(ctx, "deliver", jobID(key), []byte(d.text), args...)
	if pe := refusedRun(err); pe != nil {
		return accepted{}, tooLongFor(d.method, pe, fs...)
	}
	if err != nil {
		return accepted{}, outcomeOf(err, d.method)
	}
	if o.has("busy") {
		return accepted{}, protocol.Errorf(protocol.UnknownOutcome, "%s: %s", d.method, o.get("busy"))
	}
	if r, ok := o.vals["refused"]; ok {
		return accepted{}, refusal(d.method, r)
	}
	a := accepted{nudged: o.get("nudged") == "1"}
	var seq, base string
	switch {
	case o.has("dup"):
		a.dup = true
		seq, base, a.inc = o.get("dup"), o.get("baseline"), o.get("inc")
		a.nudged = true // the delivery was taken before; nothing to nudge
	case o.has("accepted"):
		seq, base, a.inc, a.state = o.get("accepted"), o.get("baseline"), o.get("inc"), o.get("state")
	default:
		return accepted{}, protocol.Errorf(protocol.UnknownOutcome, "%s: no answer from the host", d.method)
	}
	a.seq, _ = strconv.ParseInt(seq, 10, 64)
	if n, err := strconv.ParseInt(base, 10, 64); err == nil {
		a.baseline = &n
	}
	return a, nil
}

// readInMax is the longest stdin a script reads with builtins (lib.sh:
// readin; read takes a byte a syscall: past a few KiB, cat's exec is
// cheaper).
const readInMax = 2048

// readIn is lib.sh readin's word for a script's stdin s: "1" (read it with
// builtins) when it is short and holds no NUL, else "0" (cat).
func readIn(s string) string {
	if len(s) <= readInMax && noNUL(s) {
		return "1"
	}
	return "0"
}

func refusal(method, r string) error {
	why, rest, _ := strings.Cut(r, " ")
	switch why {
	case "nojob":
		return noJob(method)
	case "stopped":
		return protocol.Errorf(protocol.Permanent, "%s: the job was stopped", method)
	case "notaccepted":
		return protocol.Errorf(protocol.Permanent, "%s: refused: a channel.receipt already answered not-accepted for this msgId, "+
			"and that answer is final: nothing was delivered (send the text under a new msgId)", method)
	case "notrunning":
		return protocol.Errorf(protocol.Permanent, "%s: the job is not running", method)
	case "notready":
		return protocol.Errorf(protocol.Retryable, "%s: the agent's harness has not reported yet", method)
	case "incarnation":
		return protocol.Errorf(protocol.Permanent, "%s: the channel's incarnation is %q, not the one expected", method, rest)
	case "notblocked":
		return protocol.Errorf(protocol.Permanent, "%s: nothing is pending (the agent is %s); force answers anyway", method, rest)
	}
	return protocol.Errorf(protocol.Permanent, "%s: refused: %s", method, r)
}

func (j *Jobs) sendResult(a accepted, msgID string) protocol.SendResult {
	ack := protocol.AckConfirmed
	if !a.nudged {
		ack = protocol.AckUnknown
	}
	return protocol.SendResult{Channel: j.opts.Channel, Ack: ack, Baseline: a.baseline, MsgID: msgID}
}

// Send is channel.send (followUp: steer is not declared). A delivery
// queues behind the turn in progress, a blocked one included; its baseline
// counts the turns ahead of it. A resend of an accepted msgId delivers
// nothing and answers as the first time.
func (j *Jobs) Send(ctx context.Context, p protocol.SendParams) (protocol.SendResult, error) {
	if p.Mode != "" && p.Mode != protocol.ModeFollowUp {
		return protocol.SendResult{}, protocol.Errorf(protocol.Permanent, "channel.send: mode %q is not served (steer: none)", p.Mode)
	}
	a, err := j.deliver(ctx, p.Base, delivery{method: protocol.MethodChannelSend.Name, kind: "send", msgID: p.MsgID,
		text: p.Text, mode: protocol.ModeFollowUp, expect: p.ExpectIncarnation, force: p.Force})
	if err != nil {
		return protocol.SendResult{}, err
	}
	return j.sendResult(a, p.MsgID), nil
}

// Fresh is channel.fresh: the harness clears the agent's context in place
// (the incarnation and its runs go on) and takes the text as a turn.
func (j *Jobs) Fresh(ctx context.Context, p protocol.FreshParams) (protocol.SendResult, error) {
	a, err := j.deliver(ctx, p.Base, delivery{method: protocol.MethodChannelFresh.Name, kind: "fresh", msgID: p.MsgID,
		text: p.Text, expect: p.ExpectIncarnation, force: p.Force})
	if err != nil {
		return protocol.SendResult{}, err
	}
	return j.sendResult(a, p.MsgID), nil
}

// Command is channel.command: the harness runs the named command (with its
// instructions) as a turn.
func (j *Jobs) Command(ctx context.Context, p protocol.CommandParams) (protocol.SendResult, error) {
	if p.Name == "" || strings.ContainsAny(p.Name, "\n\r") {
		return protocol.SendResult{}, protocol.Errorf(protocol.Permanent, "channel.command: name must be one non-empty line")
	}
	a, err := j.deliver(ctx, p.Base, delivery{method: protocol.MethodChannelCommand.Name, kind: "command",
		text: p.Instructions, name: p.Name, expect: p.ExpectIncarnation, force: p.Force})
	if err != nil {
		return protocol.SendResult{}, err
	}
	return j.sendResult(a, ""), nil
}

// Answer is channel.answer: the keys go to the harness's answers queue,
// which a blocked turn reads. Refused when nothing is pending, unless force.
func (j *Jobs) Answer(ctx context.Context, p protocol.AnswerParams) (protocol.AnswerResult, error) {
	for _, k := range p.Keys {
		if strings.ContainsAny(k, "\n\r") {
			return protocol.AnswerResult{}, protocol.Errorf(protocol.Permanent, "channel.answer: a key holds a newline")
		}
	}
	text := strings.Join(p.Keys, "\n")
	if len(p.Keys) > 0 {
		text += "\n"
	}
	a, err := j.deliver(ctx, p.Base, delivery{method: protocol.MethodChannelAnswer.Name, kind: "answer", text: text, force: p.Force})
	if err != nil {
		return protocol.AnswerResult{}, err
	}
	ack := protocol.AckConfirmed
	if !a.nudged {
		ack = protocol.AckUnknown
	}
	keys := p.Keys
	if keys == nil {
		keys = []string{}
	}
	return protocol.AnswerResult{Keys: keys, Ack: ack}, nil
}

// Interrupt is channel.interrupt: the text is delivered, the turn in
// progress (if any) is interrupted (Options.InterruptKeys), and Interrupt
// waits up to timeoutMs for the harness to take the text. pending: it has
// not yet; runs: the baseline of the text's turn.
func (j *Jobs) Interrupt(ctx context.Context, p protocol.InterruptParams) (protocol.InterruptResult, error) {
	key, err := jobKey(protocol.MethodChannelInterrupt.Name, p.Base)
	if err != nil {
		return protocol.InterruptResult{}, err
	}
	a, err := j.deliver(ctx, p.Base, delivery{method: protocol.MethodChannelInterrupt.Name, kind: "interrupt", msgID: p.MsgID,
		text: p.Text, expect: p.ExpectIncarnation})
	if err != nil {
		return protocol.InterruptResult{}, err
	}
	res := protocol.InterruptResult{WasBusy: a.state == protocol.TurnBusy || a.state == protocol.TurnBlocked,
		Runs: a.baseline, MsgID: p.MsgID, Incarnation: a.inc, Pending: true}
	if a.dup {
		res.WasBusy = false
	}
	deadline := time.Now().Add(time.Duration(p.TimeoutMs) * time.Millisecond)
	for {
		s, found, err := j.read(ctx, key, "", 0)
		if err == nil && found && s.state != nil && s.state.Cursor >= a.seq {
			res.Pending = false
			res.Incarnation = s.state.Inc
			return res, nil
		}
		if time.Now().After(deadline) || !sleep(ctx, j.opts.Poll) {
			return res, nil
		}
	}
}

// Abort is channel.abort: the turn in progress is interrupted, and Abort
// waits up to timeoutMs for it to settle. pending: deliveries are still
// queued for the harness.
func (j *Jobs) Abort(ctx context.Context, p protocol.AbortParams) (protocol.AbortResult, error) {
	key, err := jobKey(protocol.MethodChannelAbort.Name, p.Base)
	if err != nil {
		return protocol.AbortResult{}, err
	}
	before, found, err := j.read(ctx, key, "", 0)
	if err != nil {
		return protocol.AbortResult{}, protocol.Wrap(protocol.Retryable, err, "channel.abort")
	}
	if !found {
		return protocol.AbortResult{}, noJob(protocol.MethodChannelAbort.Name)
	}
	if before.state == nil {
		return protocol.AbortResult{}, refusal(protocol.MethodChannelAbort.Name, "notready")
	}
	o, err := j.run(ctx, "abort", jobID(key), nil, j.opts.InterruptKeys...)
	if err != nil {
		return protocol.AbortResult{}, protocol.Wrap(protocol.UnknownOutcome, err, "channel.abort")
	}
	if r, ok := o.vals["refused"]; ok {
		return protocol.AbortResult{}, refusal(protocol.MethodChannelAbort.Name, r)
	}
	b0 := *before.state
	if st := o.get("state"); st != "" {
		b0.State = st
	}
	res := protocol.AbortResult{Before: idleOrBusy(b0.State), After: idleOrBusy(b0.State)}
	if res.Before == protocol.TurnIdle {
		res.Settled = true
		return res, j.pendingInto(ctx, key, &res)
	}
	deadline := time.Now().Add(time.Duration(p.TimeoutMs) * time.Millisecond)
	for {
		s, found, err := j.read(ctx, key, "", 0)
		if err == nil && found && s.state != nil {
			if s.state.Inc != b0.Inc || s.state.Runs > b0.Runs {
				res.Settled, res.Aborted = true, true
				res.After = idleOrBusy(s.state.State)
				return res, j.pendingInto(ctx, key, &res)
			}
		}
		if time.Now().After(deadline) || !sleep(ctx, j.opts.Poll) {
			return res, j.pendingInto(ctx, key, &res)
		}
	}
}

// pendingInto sets res.Pending: a delivery is queued past the harness's
// cursor.
func (j *Jobs) pendingInto(ctx context.Context, key string, res *protocol.AbortResult) error {
	o, err := j.run(ctx, "queued", jobID(key), nil)
	if err == nil {
		res.Pending = o.get("queued") != "0"
	}
	return nil
}

func idleOrBusy(s string) string {
	if s == protocol.TurnIdle {
		return protocol.TurnIdle
	}
	return protocol.TurnBusy
}
