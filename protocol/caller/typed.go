package caller

import (
	"context"

	"github.com/mu-org/mu-plugins/protocol"
)

// Typed helpers, one per method of the spec's tables that Exec, Fetch,
// Push, CheckSteps, HostStatus, JobStatus and Watch do not cover. Each is
// Call with the method's params and result types and the default budget
// (10 s, Config.ReadTimeout); use Invoke or Call for another budget, and
// NewRequest + Send to resend an effect with identical params.

// HostAcquire runs host.acquire (an effect). A result without a handle is
// a *MismatchError (an unknown outcome).
func (p *Plugin) HostAcquire(ctx context.Context, params protocol.AcquireParams) (protocol.AcquireResult, error) {
	res, err := Invoke[protocol.AcquireResult](ctx, p, protocol.MethodHostAcquire.Name, params, 0)
	if err == nil {
		err = CheckHostFound(protocol.MethodHostAcquire.Name, &res)
	}
	return zeroOnErr(res, err)
}

// HostLookup runs host.lookup.
func (p *Plugin) HostLookup(ctx context.Context, params protocol.LookupParams) (protocol.HostLookupResult, error) {
	res, err := Invoke[protocol.HostLookupResult](ctx, p, protocol.MethodHostLookup.Name, params, 0)
	if err == nil {
		err = CheckHostFound(protocol.MethodHostLookup.Name, res.Found)
	}
	return zeroOnErr(res, err)
}

// HostRelease runs host.release (an effect; null result).
func (p *Plugin) HostRelease(ctx context.Context, params protocol.KeyParams) error {
	_, err := p.Call(ctx, protocol.MethodHostRelease.Name, params, 0)
	return err
}

// JobStart runs job.start (an effect). A reply kind's result without its
// handle and view, or an at-start kind's without baseline {runs: 0}, is a
// *MismatchError (an unknown outcome).
func (p *Plugin) JobStart(ctx context.Context, params protocol.JobStartParams) (protocol.JobStartResult, error) {
	res, err := Invoke[protocol.JobStartResult](ctx, p, protocol.MethodJobStart.Name, params, 0)
	if err == nil {
		err = CheckJobStart(p.decl.Seams.Job, res)
	}
	return zeroOnErr(res, err)
}

// JobLookup runs job.lookup.
// A found that breaks JobStart's rules is a *MismatchError.
func (p *Plugin) JobLookup(ctx context.Context, params protocol.LookupParams) (protocol.JobLookupResult, error) {
	res, err := Invoke[protocol.JobLookupResult](ctx, p, protocol.MethodJobLookup.Name, params, 0)
	if err == nil {
		err = CheckJobFound(p.decl.Seams.Job, res.Found)
	}
	return zeroOnErr(res, err)
}

// JobStop runs job.stop (an effect; null result).
func (p *Plugin) JobStop(ctx context.Context, params protocol.KeyParams) error {
	_, err := p.Call(ctx, protocol.MethodJobStop.Name, params, 0)
	return err
}

// JobAttach runs job.attach.
func (p *Plugin) JobAttach(ctx context.Context, target protocol.Target) (protocol.View, error) {
	return Invoke[protocol.View](ctx, p, protocol.MethodJobAttach.Name, protocol.Base{Target: target}, 0)
}

// ReadStates runs channel.readStates. The answer keeps the asked agents'
// readings only (others are ignored); an asked agent without one is a
// *MismatchError (an unknown answer).
func (p *Plugin) ReadStates(ctx context.Context, params protocol.ReadStatesParams) (map[string]protocol.Reading, error) {
	res, err := Invoke[map[string]protocol.Reading](ctx, p, protocol.MethodChannelReadStates.Name, params, 0)
	if err != nil {
		return nil, err
	}
	return CheckReadStates(params.Targets, res)
}

// Baseline runs channel.baseline; nil when the plugin answers null.
func (p *Plugin) Baseline(ctx context.Context, target protocol.Target) (*protocol.Baseline, error) {
	return Invoke[*protocol.Baseline](ctx, p, protocol.MethodChannelBaseline.Name, protocol.Base{Target: target}, 0)
}

// Receipt runs channel.receipt. A receipt for another msgId is a
// *MismatchError (an unknown answer).
func (p *Plugin) Receipt(ctx context.Context, params protocol.ReceiptParams) (protocol.Receipt, error) {
	res, err := Invoke[protocol.Receipt](ctx, p, protocol.MethodChannelReceipt.Name, params, 0)
	if err == nil {
		err = CheckReceipt(params.MsgID, res)
	}
	return zeroOnErr(res, err)
}

// LastRun runs channel.lastRun; nil when no turn settled past afterRuns.
func (p *Plugin) LastRun(ctx context.Context, params protocol.LastRunParams) (*protocol.Observation, error) {
	return Invoke[*protocol.Observation](ctx, p, protocol.MethodChannelLastRun.Name, params, 0)
}

// ChannelSend runs channel.send (an effect). A reply naming another
// channel than the seam's, or another msgId, is a *MismatchError (an
// unknown outcome); so for ChannelFresh and ChannelCommand.
func (p *Plugin) ChannelSend(ctx context.Context, params protocol.SendParams) (protocol.SendResult, error) {
	res, err := Invoke[protocol.SendResult](ctx, p, protocol.MethodChannelSend.Name, params, 0)
	if err == nil {
		err = CheckSend(protocol.MethodChannelSend.Name, p.decl.Seams.Channel, params.MsgID, res)
	}
	return zeroOnErr(res, err)
}

// ChannelFresh runs channel.fresh (an effect).
func (p *Plugin) ChannelFresh(ctx context.Context, params protocol.FreshParams) (protocol.SendResult, error) {
	res, err := Invoke[protocol.SendResult](ctx, p, protocol.MethodChannelFresh.Name, params, 0)
	if err == nil {
		err = CheckSend(protocol.MethodChannelFresh.Name, p.decl.Seams.Channel, params.MsgID, res)
	}
	return zeroOnErr(res, err)
}

// ChannelCommand runs channel.command (an effect).
func (p *Plugin) ChannelCommand(ctx context.Context, params protocol.CommandParams) (protocol.SendResult, error) {
	res, err := Invoke[protocol.SendResult](ctx, p, protocol.MethodChannelCommand.Name, params, 0)
	if err == nil {
		err = CheckSend(protocol.MethodChannelCommand.Name, p.decl.Seams.Channel, "", res)
	}
	return zeroOnErr(res, err)
}

// Interrupt runs channel.interrupt (an effect). A reply naming another
// msgId is a *MismatchError.
func (p *Plugin) Interrupt(ctx context.Context, params protocol.InterruptParams) (protocol.InterruptResult, error) {
	res, err := Invoke[protocol.InterruptResult](ctx, p, protocol.MethodChannelInterrupt.Name, params, 0)
	if err == nil {
		err = CheckInterrupt(params.MsgID, res)
	}
	return zeroOnErr(res, err)
}

// Abort runs channel.abort (an effect).
func (p *Plugin) Abort(ctx context.Context, params protocol.AbortParams) (protocol.AbortResult, error) {
	return Invoke[protocol.AbortResult](ctx, p, protocol.MethodChannelAbort.Name, params, 0)
}

// Answer runs channel.answer (an effect).
func (p *Plugin) Answer(ctx context.Context, params protocol.AnswerParams) (protocol.AnswerResult, error) {
	return Invoke[protocol.AnswerResult](ctx, p, protocol.MethodChannelAnswer.Name, params, 0)
}

// zeroOnErr: a result that failed its check is never handed out as one.
func zeroOnErr[T any](v T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}
