package caller

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// Invoke is Call with the result decoded into T (a protocol result type).
// The result has passed the schema; decoding is not strict beyond it.
func Invoke[T any](ctx context.Context, p *Plugin, method string, params any, timeout time.Duration) (T, error) {
	var v T
	raw, err := p.Call(ctx, method, params, timeout)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, &InvalidReplyError{Method: method, Violation: &Violation{Rule: VSchema, Detail: err.Error(), Excerpt: excerpt(raw)}}
	}
	return v, nil
}

// Exec runs link.exec: timeout is the script's timeoutMs (zero: 20 s); the
// call's deadline is timeout plus one grace.
func (p *Plugin) Exec(ctx context.Context, target protocol.Target, script, cwd string, timeout time.Duration) (protocol.ExecResult, error) {
	timeout = runTimeout(timeout)
	return p.run(ctx, protocol.MethodLinkExec.Name, protocol.ExecParams{
		Base: protocol.Base{Target: target}, Script: script, Cwd: cwd, TimeoutMs: timeout.Milliseconds(),
	}, timeout)
}

// Fetch runs link.fetch, timed as Exec.
func (p *Plugin) Fetch(ctx context.Context, target protocol.Target, remoteCwd, localRepo string, timeout time.Duration) (protocol.ExecResult, error) {
	timeout = runTimeout(timeout)
	return p.run(ctx, protocol.MethodLinkFetch.Name, protocol.FetchParams{
		Base: protocol.Base{Target: target}, RemoteCwd: remoteCwd, LocalRepo: localRepo, TimeoutMs: timeout.Milliseconds(),
	}, timeout)
}

// Push runs link.push, timed as Exec.
func (p *Plugin) Push(ctx context.Context, target protocol.Target, localRepo, remoteRepo, rev string, timeout time.Duration) (protocol.ExecResult, error) {
	timeout = runTimeout(timeout)
	return p.run(ctx, protocol.MethodLinkPush.Name, protocol.PushParams{
		Base: protocol.Base{Target: target}, LocalRepo: localRepo, RemoteRepo: remoteRepo, Rev: rev, TimeoutMs: timeout.Milliseconds(),
	}, timeout)
}

// runTimeout is a run's timeoutMs: timeout, or DefaultExecTimeout for zero.
func runTimeout(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return DefaultExecTimeout
	}
	return timeout
}

// run sends a run (exec, fetch, push) whose call's deadline is its
// timeout plus one grace.
func (p *Plugin) run(ctx context.Context, method string, params any, timeout time.Duration) (protocol.ExecResult, error) {
	return Invoke[protocol.ExecResult](ctx, p, method, params, timeout+protocol.Grace)
}

// CheckSteps runs link.checkSteps or job.checkSteps (a read: 10 s).
func (p *Plugin) CheckSteps(ctx context.Context, method string, params protocol.CheckStepsParams) ([]protocol.Step, error) {
	return Invoke[[]protocol.Step](ctx, p, method, params, 0)
}

// HostStatus runs host.status.
func (p *Plugin) HostStatus(ctx context.Context, target protocol.Target) (protocol.HostStatus, error) {
	return Invoke[protocol.HostStatus](ctx, p, protocol.MethodHostStatus.Name, protocol.Base{Target: target}, 0)
}

// JobStatus runs job.status.
func (p *Plugin) JobStatus(ctx context.Context, target protocol.Target) (protocol.JobStatus, error) {
	return Invoke[protocol.JobStatus](ctx, p, protocol.MethodJobStatus.Name, protocol.Base{Target: target}, 0)
}

// Run starts the plugin, runs fn, and always stops the plugin (the stop
// sequence) before returning fn's error, or Start's.
func Run(ctx context.Context, cfg Config, fn func(p *Plugin) error) error {
	p, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer p.Stop()
	return fn(p)
}
