package docker

import (
	"context"
	"fmt"
	"os"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/backend/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// JobsDir is where a container keeps its jobs (tmuxjob's state root),
// under the login directory of the image's user.
const JobsDir = ".mu-jobs"

// ViewCommand is the sub-command a job's view runs: it follows the job's
// terminal output through the Engine (docs/docker.md).
const ViewCommand = "view"

// jobHandlers are the job.* and channel.* handlers: tmuxjob's over the
// container's Runner, with job.start, lookup, status and stop answering
// from the container's state first when it is not running.
func (b *Backend) jobHandlers() map[string]protocol.Handler {
	h := tmuxjob.Handlers(b.jobsFor)
	h[protocol.MethodJobStatus] = b.jobStatus(h[protocol.MethodJobStatus])
	h[protocol.MethodJobStop] = b.jobStop(h[protocol.MethodJobStop])
	h[protocol.MethodJobLookup] = b.jobLookup(h[protocol.MethodJobLookup])
	h[protocol.MethodJobStart] = b.jobStart(h[protocol.MethodJobStart])
	return h
}

// jobsFor is the Jobs of the container a call's target names (a host of
// this instance).
func (b *Backend) jobsFor(ctx context.Context, t protocol.Target) (*tmuxjob.Jobs, error) {
	ctr, err := b.hostOf(ctx, t)
	if err != nil {
		return nil, err
	}
	root, err := b.jobsRoot(ctx, ctr)
	if err != nil {
		return nil, err
	}
	return b.newJobs(ctr, root)
}

func (b *Backend) newJobs(ctr, root string) (*tmuxjob.Jobs, error) {
	self := b.cfg.Self
	return tmuxjob.New(b.Runner(ctr), tmuxjob.Options{
		Root: root, Kind: "docker", Channel: b.cfg.Channel,
		View: func(handle, _ string) protocol.View {
			return tmuxjob.ViewArgv(b.viewEnv(), self, ViewCommand, "--container", ctr, "--root", root, handle)
		},
	})
}

// viewEnv carries the Engine's address to the view, which mu runs in a
// local pane whose environment may not be the plugin's.
func (b *Backend) viewEnv() map[string]string {
	return b.cfg.Endpoint.PinEnv(os.Getenv)
}

// jobsRoot is ctr's jobs directory: $HOME/.mu-jobs of the image's user
// (asked once per container per invocation).
func (b *Backend) jobsRoot(ctx context.Context, ctr string) (string, error) {
	return b.roots.Get(ctx, ctr, b.Runner(ctr), JobsDir, "container "+short(ctr))
}

// ctrState is what the Engine says of a container, for the job calls.
type ctrState int

const (
	ctrRunning ctrState = iota
	ctrStopped          // exited, dead or never started: none of its processes runs
	ctrGone             // it does not exist
	ctrUnknown          // the Engine did not answer, or it is paused or restarting
)

// containerState inspects the call's container. A container that is not
// this instance's host is an error.
func (b *Backend) containerState(ctx context.Context, t protocol.Target) (ctrState, string, error) {
	ctr, err := b.handle(t)
	if err != nil {
		return ctrUnknown, "", err
	}
	ins, err := b.api.ContainerInspect(ctx, ctr, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		b.dropPool(ctr)
		return ctrGone, "container " + short(ctr) + " no longer exists", nil
	}
	if err != nil {
		return ctrUnknown, "the Docker Engine: " + err.Error(), nil
	}
	l := labelsOf(ins.Container)
	if l[LabelPlugin] != "docker" || l[LabelInstance] != b.instance || l[LabelFence] == "1" {
		return ctrUnknown, "", protocol.Errorf(protocol.Permanent, "container %s is not a host of instance %q", short(ctr), b.instance)
	}
	st := ins.Container.State
	switch {
	case st == nil:
		return ctrUnknown, "the Engine reported no state", nil
	case st.Paused:
		return ctrUnknown, "container " + short(ctr) + " is paused", nil
	case st.Restarting:
		return ctrUnknown, "container " + short(ctr) + " is restarting", nil
	case st.Running:
		return ctrRunning, "", nil
	}
	b.dropPool(ctr)
	return ctrStopped, fmt.Sprintf("container %s is %s: its processes are gone", short(ctr), st.Status), nil
}

// guard serves next only in a running container. In any other state the
// container's state alone decides the method's answer, and nothing is run.
func (b *Backend) guard(next protocol.Handler, answer func(st ctrState, why string) (any, error)) protocol.Handler {
	return func(ctx context.Context, call *protocol.Call) (any, error) {
		st, why, err := b.containerState(ctx, call.Base.Target)
		if err != nil {
			return nil, err
		}
		if st == ctrRunning {
			return next(ctx, call)
		}
		return answer(st, why)
	}
}

// jobStatus: a job in a container that stopped or is gone is lost (no
// exit was recorded that could still be read); an Engine that does not
// answer is unknown.
func (b *Backend) jobStatus(next protocol.Handler) protocol.Handler {
	return b.guard(next, func(st ctrState, why string) (any, error) {
		if st == ctrUnknown {
			return protocol.JobStatus{State: protocol.JobUnknown, Reason: why}, nil
		}
		return protocol.JobStatus{State: protocol.JobLost, Reason: why}, nil
	})
}

// jobStop: nothing runs in a container that stopped or is gone, which is
// the proof job.stop's null needs. When the Engine does not say, nothing
// is done: retryable.
func (b *Backend) jobStop(next protocol.Handler) protocol.Handler {
	return b.guard(next, func(st ctrState, why string) (any, error) {
		if st == ctrUnknown {
			return nil, protocol.Errorf(protocol.Retryable, "job.stop: %s: nothing was done", why)
		}
		return nil, nil
	})
}

// jobLookup: no job can be found, nor ever start, in a container that is
// gone: none (fenced or not). Stopped or unanswered: unknown.
func (b *Backend) jobLookup(next protocol.Handler) protocol.Handler {
	return b.guard(next, func(st ctrState, why string) (any, error) {
		if st == ctrGone {
			return protocol.JobLookupResult{None: true}, nil
		}
		return protocol.JobLookupResult{Unknown: why}, nil
	})
}

// jobStart: a container that is gone or stopped starts nothing: a
// definite refusal. When the Engine does not say, retryable.
func (b *Backend) jobStart(next protocol.Handler) protocol.Handler {
	return b.guard(next, func(st ctrState, why string) (any, error) {
		if st == ctrUnknown {
			return nil, protocol.Errorf(protocol.Retryable, "job.start: %s: nothing was started", why)
		}
		return nil, protocol.Errorf(protocol.Permanent, "job.start: %s: nothing was started", why)
	})
}
