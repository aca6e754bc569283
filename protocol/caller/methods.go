package caller

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// Invoker is what Invoke calls through: a *Plugin, or a type that
// embeds one.
type Invoker interface{ plugin() *Plugin }

func (p *Plugin) plugin() *Plugin { return p }

// Invoke calls m with params, within the method's default budget (see
// Timeout), and returns its result as m's result type, checked against
// its request (see "Reply checks": a result that fails is a
// *MismatchError, never handed out). It is the one typed way to call a
// method:
//
//	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, params) // a protocol.JobStartResult
func Invoke[P, R any](ctx context.Context, p Invoker, m protocol.Method[P, R], params P) (R, error) {
	return InvokeWithin(ctx, p, m, params, 0)
}

// InvokeWithin is Invoke with the call's whole budget timeout (zero: the
// method's default).
func InvokeWithin[P, R any](ctx context.Context, p Invoker, m protocol.Method[P, R], params P, timeout time.Duration) (R, error) {
	var res R
	pl := p.plugin()
	raw, err := pl.Call(ctx, m.Name, params, timeout)
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return res, &InvalidReplyError{Method: m.Name, Violation: &Violation{Rule: VSchema, Detail: err.Error(), Excerpt: excerpt(raw)}}
	}
	if err := checkReply(pl.decl.Seams, m.Name, params, &res); err != nil {
		var zero R
		return zero, err
	}
	return res, nil
}

// Exec runs link.exec: timeout is the script's timeoutMs (zero: 20 s); the
// call's deadline is timeout plus one grace.
func (p *Plugin) Exec(ctx context.Context, target protocol.Target, script, cwd string, timeout time.Duration) (protocol.ExecResult, error) {
	timeout = runTimeout(timeout)
	return run(ctx, p, protocol.MethodLinkExec, protocol.ExecParams{
		Base: protocol.Base{Target: target}, Script: script, Cwd: cwd, TimeoutMs: timeout.Milliseconds(),
	}, timeout)
}

// Fetch runs link.fetch, timed as Exec.
func (p *Plugin) Fetch(ctx context.Context, target protocol.Target, remoteCwd, localRepo string, timeout time.Duration) (protocol.ExecResult, error) {
	timeout = runTimeout(timeout)
	return run(ctx, p, protocol.MethodLinkFetch, protocol.FetchParams{
		Base: protocol.Base{Target: target}, RemoteCwd: remoteCwd, LocalRepo: localRepo, TimeoutMs: timeout.Milliseconds(),
	}, timeout)
}

// Push runs link.push, timed as Exec.
func (p *Plugin) Push(ctx context.Context, target protocol.Target, localRepo, remoteRepo, rev string, timeout time.Duration) (protocol.ExecResult, error) {
	timeout = runTimeout(timeout)
	return run(ctx, p, protocol.MethodLinkPush, protocol.PushParams{
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
func run[P any](ctx context.Context, p *Plugin, m protocol.Method[P, protocol.ExecResult], params P, timeout time.Duration) (protocol.ExecResult, error) {
	return InvokeWithin(ctx, p, m, params, timeout+protocol.Grace)
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
