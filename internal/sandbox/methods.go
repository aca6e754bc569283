package sandbox

import (
	"context"
	"errors"

	"github.com/mu-org/mu-plugins/protocol"
)

// HostMethods are the provider's own host methods and its
// link.checkSteps. Acquire, Lookup and Release are called only with a key
// (Methods refuses a call without one).
type HostMethods interface {
	Acquire(context.Context, *protocol.Call, protocol.AcquireParams) (protocol.AcquireResult, error)
	Lookup(context.Context, *protocol.Call, protocol.LookupParams) (protocol.HostLookupResult, error)
	Status(context.Context, *protocol.Call, protocol.Base) (protocol.HostStatus, error)
	Release(context.Context, *protocol.Call, protocol.KeyParams) (protocol.Null, error)
	CheckSteps(context.Context, *protocol.Call, protocol.CheckStepsParams) ([]protocol.Step, error)
}

// Gate is how the method table waits for the provider: Reach makes sure
// it answers (once per plugin's life, bounded); ProviderName names it in
// the error of a call cancelled before ("the Engine", "the API server").
type Gate interface {
	Reach(ctx context.Context) error
	ProviderName() string
}

// Methods is the method table: the provider's host methods, the link's
// (Exec, Fetch, Push) and jobs (tmuxjob's, JobHandlers). Every call's
// target.host.instance is checked first: a host or link method's once its
// params are decoded, a job or channel method's before its host or its
// Jobs are looked at; then a host effect's key (keyed). Every method but
// link.checkSteps, whose steps say what is wrong, waits for the provider
// (gated).
func (h *Hosts) Methods(jobs protocol.Methods) protocol.Methods {
	own := h.p
	m := protocol.NewMethods(
		protocol.MethodHostAcquire.Serve(checked(h, keyed(own.Acquire))),
		protocol.MethodHostLookup.Serve(checked(h, keyed(own.Lookup))),
		protocol.MethodHostStatus.Serve(checked(h, own.Status)),
		protocol.MethodHostRelease.Serve(checked(h, keyed(own.Release))),
		protocol.MethodLinkExec.Serve(checked(h, h.Exec)),
		protocol.MethodLinkFetch.Serve(checked(h, h.Fetch)),
		protocol.MethodLinkPush.Serve(checked(h, h.Push)),
		protocol.MethodLinkCheckSteps.Serve(checked(h, own.CheckSteps)),
	)
	for method, f := range jobs {
		m[method] = h.sameInstance(f)
	}
	for method, f := range m {
		if method != protocol.MethodLinkCheckSteps.Name { // its steps say what is wrong
			m[method] = gated(h.p, method, f)
		}
	}
	return m
}

// checked is fn once its target's instance was checked (its params are
// decoded first, by Method.Serve).
func checked[P, R any](h *Hosts, fn func(context.Context, *protocol.Call, P) (R, error)) func(context.Context, *protocol.Call, P) (R, error) {
	return func(ctx context.Context, c *protocol.Call, p P) (R, error) {
		if err := h.CheckInstance(c.Base.Target); err != nil {
			var zero R
			return zero, err
		}
		return fn(ctx, c, p)
	}
}

// keyed refuses a host effect's call (acquire, lookup, release) whose key
// is empty, before fn looks at the provider.
func keyed[P protocol.AcquireParams | protocol.LookupParams | protocol.KeyParams, R any](fn func(context.Context, *protocol.Call, P) (R, error)) func(context.Context, *protocol.Call, P) (R, error) {
	return func(ctx context.Context, c *protocol.Call, p P) (R, error) {
		var key string
		switch p := any(p).(type) {
		case protocol.AcquireParams:
			key = p.Key
		case protocol.LookupParams:
			key = p.Key
		case protocol.KeyParams:
			key = p.Key
		}
		if key == "" {
			var zero R
			return zero, protocol.Errorf(protocol.Permanent, "%s: key is required", c.Method)
		}
		return fn(ctx, c, p)
	}
}

// sameInstance serves next only for a call of this instance.
func (h *Hosts) sameInstance(next protocol.Handler) protocol.Handler {
	return func(ctx context.Context, c *protocol.Call) (any, error) {
		if err := h.CheckInstance(c.Base.Target); err != nil {
			return nil, err
		}
		return next(ctx, c)
	}
}

// CheckInstance refuses a call recorded under another instance.
func (h *Hosts) CheckInstance(t protocol.Target) error {
	if in := t.Host.Instance; in != "" && in != h.instance {
		return protocol.Errorf(protocol.Permanent, "target.host.instance %q is not this plugin's instance %q", in, h.instance)
	}
	return nil
}

// gated serves method only once the provider was reached. When it was
// not, a read answers what it answers for a provider that is down
// (unknown), and any other call fails with the reach error: nothing was
// done.
func gated(g Gate, method string, next protocol.Handler) protocol.Handler {
	return func(ctx context.Context, call *protocol.Call) (any, error) {
		err := g.Reach(ctx)
		if err == nil {
			return next(ctx, call)
		}
		if ctx.Err() != nil {
			return nil, protocol.Wrap(protocol.Retryable, err, "cancelled before "+g.ProviderName()+" was reached: nothing was done")
		}
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Kind != protocol.Retryable {
			return nil, err // a provider a person must fix
		}
		why := pe.Message
		switch method {
		case protocol.MethodHostLookup.Name:
			return protocol.MethodHostLookup.Answer(protocol.HostLookupResult{Unknown: why})
		case protocol.MethodHostStatus.Name:
			return protocol.MethodHostStatus.Answer(protocol.HostStatus{State: protocol.HostUnknown, Reason: why})
		case protocol.MethodJobLookup.Name:
			return protocol.MethodJobLookup.Answer(protocol.JobLookupResult{Unknown: why})
		case protocol.MethodJobStatus.Name:
			return protocol.MethodJobStatus.Answer(protocol.JobStatus{State: protocol.JobUnknown, Reason: why})
		}
		return nil, err
	}
}
