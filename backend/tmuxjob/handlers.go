package tmuxjob

import (
	"context"

	"github.com/mu-org/mu-plugins/protocol"
)

// Handlers serves every job.* and channel.* method
// through resolve, for protocol.Options.Handlers. A backend adds them to
// its own map.
func Handlers(resolve Resolver) map[string]protocol.Handler {
	type h = protocol.Handler
	with := func(method string, f func(ctx context.Context, j *Jobs, call *protocol.Call) (any, error)) h {
		return func(ctx context.Context, call *protocol.Call) (any, error) {
			j, err := resolve(ctx, call.Base.Target)
			if err != nil {
				return nil, err
			}
			return f(ctx, j, call)
		}
	}
	m := map[string]protocol.Handler{}
	m[protocol.MethodJobStart] = with(protocol.MethodJobStart, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.JobStartParams
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		return j.Start(ctx, p)
	})
	m[protocol.MethodJobLookup] = with(protocol.MethodJobLookup, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.LookupParams
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		return j.Lookup(ctx, p)
	})
	m[protocol.MethodJobStatus] = with(protocol.MethodJobStatus, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.Base
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		key, err := jobKey(protocol.MethodJobStatus, p)
		if err != nil {
			return nil, err
		}
		return j.Status(ctx, key)
	})
	m[protocol.MethodJobStop] = with(protocol.MethodJobStop, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.KeyParams
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		return nil, j.Stop(ctx, p.Key)
	})
	m[protocol.MethodJobAttach] = with(protocol.MethodJobAttach, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.Base
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		key, err := jobKey(protocol.MethodJobAttach, p)
		if err != nil {
			return nil, err
		}
		return j.Attach(ctx, key)
	})
	m[protocol.MethodJobCheckSteps] = with(protocol.MethodJobCheckSteps, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.CheckStepsParams
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		return j.CheckSteps(ctx, p.Phase)
	})
	m[protocol.MethodChannelReadStates] = with(protocol.MethodChannelReadStates, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.ReadStatesParams
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		return j.ReadStates(ctx, p)
	})
	m[protocol.MethodChannelBaseline] = with(protocol.MethodChannelBaseline, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.Base
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		key, err := jobKey(protocol.MethodChannelBaseline, p)
		if err != nil {
			return nil, err
		}
		b, err := j.Baseline(ctx, key)
		if err != nil || b == nil {
			return nil, err
		}
		return b, nil
	})
	m[protocol.MethodChannelReceipt] = with(protocol.MethodChannelReceipt, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.ReceiptParams
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		return j.Receipt(ctx, p)
	})
	m[protocol.MethodChannelLastRun] = with(protocol.MethodChannelLastRun, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.LastRunParams
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		o, err := j.LastRun(ctx, p)
		if err != nil || o == nil {
			return nil, err
		}
		return o, nil
	})
	m[protocol.MethodChannelWatch] = with(protocol.MethodChannelWatch, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.WatchParams
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		res, run, err := j.Watch(ctx, p)
		if err != nil {
			return nil, err
		}
		c.Watch(res.WatchID, run)
		return res, nil
	})
	m[protocol.MethodChannelSend] = with(protocol.MethodChannelSend, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.SendParams
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		return j.Send(ctx, p)
	})
	m[protocol.MethodChannelFresh] = with(protocol.MethodChannelFresh, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.FreshParams
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		return j.Fresh(ctx, p)
	})
	m[protocol.MethodChannelCommand] = with(protocol.MethodChannelCommand, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.CommandParams
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		return j.Command(ctx, p)
	})
	m[protocol.MethodChannelInterrupt] = with(protocol.MethodChannelInterrupt, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.InterruptParams
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		return j.Interrupt(ctx, p)
	})
	m[protocol.MethodChannelAbort] = with(protocol.MethodChannelAbort, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.AbortParams
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		return j.Abort(ctx, p)
	})
	m[protocol.MethodChannelAnswer] = with(protocol.MethodChannelAnswer, func(ctx context.Context, j *Jobs, c *protocol.Call) (any, error) {
		var p protocol.AnswerParams
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		return j.Answer(ctx, p)
	})
	return m
}
