package tmuxjob

import (
	"context"

	"github.com/mu-org/mu-plugins/protocol"
)

// Handlers serves every job.* and channel.* method through resolve, for a
// plugin's method table (protocol.Options.Handlers): a backend adds them to
// its own.
func Handlers(resolve Resolver) protocol.Methods {
	return protocol.NewMethods(
		protocol.MethodJobStart.Serve(on(resolve, (*Jobs).Start)),
		protocol.MethodJobLookup.Serve(on(resolve, (*Jobs).Lookup)),
		protocol.MethodJobStatus.Serve(onKey(resolve, (*Jobs).Status)),
		protocol.MethodJobStop.Serve(on(resolve, (*Jobs).stopKey)),
		protocol.MethodJobAttach.Serve(onKey(resolve, (*Jobs).Attach)),
		protocol.MethodJobCheckSteps.Serve(on(resolve, (*Jobs).checkPhase)),

		protocol.MethodChannelReadStates.Serve(on(resolve, (*Jobs).ReadStates)),
		protocol.MethodChannelBaseline.Serve(onKey(resolve, (*Jobs).Baseline)),
		protocol.MethodChannelReceipt.Serve(on(resolve, (*Jobs).Receipt)),
		protocol.MethodChannelLastRun.Serve(on(resolve, (*Jobs).LastRun)),
		protocol.MethodChannelWatch.Serve(onCall(resolve, (*Jobs).watch)),
		protocol.MethodChannelSend.Serve(on(resolve, (*Jobs).Send)),
		protocol.MethodChannelFresh.Serve(on(resolve, (*Jobs).Fresh)),
		protocol.MethodChannelCommand.Serve(on(resolve, (*Jobs).Command)),
		protocol.MethodChannelInterrupt.Serve(on(resolve, (*Jobs).Interrupt)),
		protocol.MethodChannelAbort.Serve(on(resolve, (*Jobs).Abort)),
		protocol.MethodChannelAnswer.Serve(on(resolve, (*Jobs).Answer)),
	)
}

// onCall serves fn, once its params are decoded (Method.Serve), on the
// call's Jobs.
func onCall[P, R any](resolve Resolver, fn func(*Jobs, context.Context, *protocol.Call, P) (R, error)) func(context.Context, *protocol.Call, P) (R, error) {
	return func(ctx context.Context, c *protocol.Call, p P) (R, error) {
		j, err := resolve(ctx, c.Base.Target)
		if err != nil {
			var zero R
			return zero, err
		}
		return fn(j, ctx, c, p)
	}
}

// on serves a Jobs method that takes the method's params.
func on[P, R any](resolve Resolver, fn func(*Jobs, context.Context, P) (R, error)) func(context.Context, *protocol.Call, P) (R, error) {
	return onCall(resolve, func(j *Jobs, ctx context.Context, _ *protocol.Call, p P) (R, error) {
		return fn(j, ctx, p)
	})
}

// onKey serves a Jobs method of the job target.job names.
func onKey[R any](resolve Resolver, fn func(*Jobs, context.Context, string) (R, error)) func(context.Context, *protocol.Call, protocol.Base) (R, error) {
	return onCall(resolve, func(j *Jobs, ctx context.Context, c *protocol.Call, p protocol.Base) (R, error) {
		key, err := jobKey(c.Method, p)
		if err != nil {
			var zero R
			return zero, err
		}
		return fn(j, ctx, key)
	})
}

func (j *Jobs) stopKey(ctx context.Context, p protocol.KeyParams) (protocol.Null, error) {
	return protocol.Null{}, j.Stop(ctx, p.Key)
}

func (j *Jobs) checkPhase(ctx context.Context, p protocol.CheckStepsParams) ([]protocol.Step, error) {
	return j.CheckSteps(ctx, p.Phase)
}

// watch answers channel.watch and registers the watch's run with the call.
func (j *Jobs) watch(ctx context.Context, c *protocol.Call, p protocol.WatchParams) (protocol.WatchResult, error) {
	res, run, err := j.Watch(ctx, p)
	if err != nil {
		return protocol.WatchResult{}, err
	}
	c.Watch(res.WatchID, run)
	return res, nil
}
