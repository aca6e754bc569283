package tmuxjob

import (
	"context"

	"github.com/mu-org/mu-plugins/protocol"
)

// Handlers serves every job.* and channel.* method through resolve, for a
// plugin's method table (protocol.Options.Handlers): a backend adds them to
// its own.
func Handlers(resolve Resolver) protocol.Methods {
	return protocol.Methods{
		protocol.MethodJobStart:      on(resolve, (*Jobs).Start),
		protocol.MethodJobLookup:     on(resolve, (*Jobs).Lookup),
		protocol.MethodJobStatus:     onKey(resolve, (*Jobs).Status),
		protocol.MethodJobStop:       on(resolve, (*Jobs).stopKey),
		protocol.MethodJobAttach:     onKey(resolve, (*Jobs).Attach),
		protocol.MethodJobCheckSteps: on(resolve, (*Jobs).checkPhase),

		protocol.MethodChannelReadStates: on(resolve, (*Jobs).ReadStates),
		protocol.MethodChannelBaseline:   onKey(resolve, (*Jobs).Baseline),
		protocol.MethodChannelReceipt:    on(resolve, (*Jobs).Receipt),
		protocol.MethodChannelLastRun:    on(resolve, (*Jobs).LastRun),
		protocol.MethodChannelWatch:      onCall(resolve, (*Jobs).watch),
		protocol.MethodChannelSend:       on(resolve, (*Jobs).Send),
		protocol.MethodChannelFresh:      on(resolve, (*Jobs).Fresh),
		protocol.MethodChannelCommand:    on(resolve, (*Jobs).Command),
		protocol.MethodChannelInterrupt:  on(resolve, (*Jobs).Interrupt),
		protocol.MethodChannelAbort:      on(resolve, (*Jobs).Abort),
		protocol.MethodChannelAnswer:     on(resolve, (*Jobs).Answer),
	}
}

// onCall serves fn: the call's Jobs is resolved first, then its params are
// decoded (protocol.Handle) and fn runs.
func onCall[P any](resolve Resolver, fn func(*Jobs, context.Context, *protocol.Call, P) (any, error)) protocol.Handler {
	return func(ctx context.Context, c *protocol.Call) (any, error) {
		j, err := resolve(ctx, c.Base.Target)
		if err != nil {
			return nil, err
		}
		return protocol.Handle(func(ctx context.Context, c *protocol.Call, p P) (any, error) {
			return fn(j, ctx, c, p)
		})(ctx, c)
	}
}

// on serves a Jobs method that takes the method's params.
func on[P, R any](resolve Resolver, fn func(*Jobs, context.Context, P) (R, error)) protocol.Handler {
	return onCall(resolve, func(j *Jobs, ctx context.Context, _ *protocol.Call, p P) (any, error) {
		return fn(j, ctx, p)
	})
}

// onKey serves a Jobs method of the job target.job names.
func onKey[R any](resolve Resolver, fn func(*Jobs, context.Context, string) (R, error)) protocol.Handler {
	return onCall(resolve, func(j *Jobs, ctx context.Context, c *protocol.Call, p protocol.Base) (any, error) {
		key, err := jobKey(c.Method, p)
		if err != nil {
			return nil, err
		}
		return fn(j, ctx, key)
	})
}

func (j *Jobs) stopKey(ctx context.Context, p protocol.KeyParams) (any, error) {
	return nil, j.Stop(ctx, p.Key)
}

func (j *Jobs) checkPhase(ctx context.Context, p protocol.CheckStepsParams) ([]protocol.Step, error) {
	return j.CheckSteps(ctx, p.Phase)
}

// watch answers channel.watch and registers the watch's run with the call.
func (j *Jobs) watch(ctx context.Context, c *protocol.Call, p protocol.WatchParams) (any, error) {
	res, run, err := j.Watch(ctx, p)
	if err != nil {
		return nil, err
	}
	c.Watch(res.WatchID, run)
	return res, nil
}
