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

// HostAcquire runs host.acquire (an effect).
func (p *Plugin) HostAcquire(ctx context.Context, params protocol.AcquireParams) (protocol.AcquireResult, error) {
	return Invoke[protocol.AcquireResult](ctx, p, protocol.MethodHostAcquire, params, 0)
}

// HostLookup runs host.lookup.
func (p *Plugin) HostLookup(ctx context.Context, params protocol.LookupParams) (protocol.HostLookupResult, error) {
	return Invoke[protocol.HostLookupResult](ctx, p, protocol.MethodHostLookup, params, 0)
}

// HostRelease runs host.release (an effect; null result).
func (p *Plugin) HostRelease(ctx context.Context, params protocol.KeyParams) error {
	_, err := p.Call(ctx, protocol.MethodHostRelease, params, 0)
	return err
}

// JobStart runs job.start (an effect).
func (p *Plugin) JobStart(ctx context.Context, params protocol.JobStartParams) (protocol.JobStartResult, error) {
	return Invoke[protocol.JobStartResult](ctx, p, protocol.MethodJobStart, params, 0)
}

// JobLookup runs job.lookup.
func (p *Plugin) JobLookup(ctx context.Context, params protocol.LookupParams) (protocol.JobLookupResult, error) {
	return Invoke[protocol.JobLookupResult](ctx, p, protocol.MethodJobLookup, params, 0)
}

// JobStop runs job.stop (an effect; null result).
func (p *Plugin) JobStop(ctx context.Context, params protocol.KeyParams) error {
	_, err := p.Call(ctx, protocol.MethodJobStop, params, 0)
	return err
}

// JobAttach runs job.attach.
func (p *Plugin) JobAttach(ctx context.Context, target protocol.Target) (protocol.View, error) {
	return Invoke[protocol.View](ctx, p, protocol.MethodJobAttach, protocol.Base{Target: target}, 0)
}

// ReadStates runs channel.readStates.
func (p *Plugin) ReadStates(ctx context.Context, params protocol.ReadStatesParams) (map[string]protocol.Reading, error) {
	return Invoke[map[string]protocol.Reading](ctx, p, protocol.MethodChannelReadStates, params, 0)
}

// Baseline runs channel.baseline; nil when the plugin answers null.
func (p *Plugin) Baseline(ctx context.Context, target protocol.Target) (*protocol.Baseline, error) {
	return Invoke[*protocol.Baseline](ctx, p, protocol.MethodChannelBaseline, protocol.Base{Target: target}, 0)
}

// Receipt runs channel.receipt.
func (p *Plugin) Receipt(ctx context.Context, params protocol.ReceiptParams) (protocol.Receipt, error) {
	return Invoke[protocol.Receipt](ctx, p, protocol.MethodChannelReceipt, params, 0)
}

// LastRun runs channel.lastRun; nil when no turn settled past afterRuns.
func (p *Plugin) LastRun(ctx context.Context, params protocol.LastRunParams) (*protocol.Observation, error) {
	return Invoke[*protocol.Observation](ctx, p, protocol.MethodChannelLastRun, params, 0)
}

// ChannelSend runs channel.send (an effect).
func (p *Plugin) ChannelSend(ctx context.Context, params protocol.SendParams) (protocol.SendResult, error) {
	return Invoke[protocol.SendResult](ctx, p, protocol.MethodChannelSend, params, 0)
}

// ChannelFresh runs channel.fresh (an effect).
func (p *Plugin) ChannelFresh(ctx context.Context, params protocol.FreshParams) (protocol.SendResult, error) {
	return Invoke[protocol.SendResult](ctx, p, protocol.MethodChannelFresh, params, 0)
}

// ChannelCommand runs channel.command (an effect).
func (p *Plugin) ChannelCommand(ctx context.Context, params protocol.CommandParams) (protocol.SendResult, error) {
	return Invoke[protocol.SendResult](ctx, p, protocol.MethodChannelCommand, params, 0)
}

// Interrupt runs channel.interrupt (an effect).
func (p *Plugin) Interrupt(ctx context.Context, params protocol.InterruptParams) (protocol.InterruptResult, error) {
	return Invoke[protocol.InterruptResult](ctx, p, protocol.MethodChannelInterrupt, params, 0)
}

// Abort runs channel.abort (an effect).
func (p *Plugin) Abort(ctx context.Context, params protocol.AbortParams) (protocol.AbortResult, error) {
	return Invoke[protocol.AbortResult](ctx, p, protocol.MethodChannelAbort, params, 0)
}

// Answer runs channel.answer (an effect).
func (p *Plugin) Answer(ctx context.Context, params protocol.AnswerParams) (protocol.AnswerResult, error) {
	return Invoke[protocol.AnswerResult](ctx, p, protocol.MethodChannelAnswer, params, 0)
}
