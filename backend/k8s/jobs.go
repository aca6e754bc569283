package k8s

import (
	"context"
	"path"
	"strings"

	"github.com/mu-org/mu-plugins/backend/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// JobsDir is where a pod keeps its jobs (tmuxjob's state root), under the
// login directory of the container's user.
const JobsDir = ".mu-jobs"

// ViewCommand is the sub-command a job's view runs: it follows the job's
// terminal output over pods/exec (docs/k8s.md).
const ViewCommand = "view"

// jobHandlers are the job.* and channel.* handlers: tmuxjob's over the
// pod's Runner (its pooled exec channels), with job.start, lookup, status
// and stop answering from the pod's state first when it is not running.
func (b *Backend) jobHandlers() map[string]protocol.Handler {
	h := tmuxjob.Handlers(b.jobsFor)
	h[protocol.MethodJobStatus] = b.guard(h[protocol.MethodJobStatus], func(unclear bool, why string) (any, error) {
		if unclear {
			return protocol.JobStatus{State: protocol.JobUnknown, Reason: why}, nil
		}
		return protocol.JobStatus{State: protocol.JobLost, Reason: why}, nil
	})
	h[protocol.MethodJobStop] = b.guard(h[protocol.MethodJobStop], func(unclear bool, why string) (any, error) {
		if unclear {
			return nil, protocol.Errorf(protocol.Retryable, "job.stop: %s: nothing was done", why)
		}
		return nil, nil // nothing runs in a pod that is gone: the proof job.stop needs
	})
	h[protocol.MethodJobLookup] = b.guard(h[protocol.MethodJobLookup], func(unclear bool, why string) (any, error) {
		if unclear {
			return protocol.JobLookupResult{Unknown: why}, nil
		}
		return protocol.JobLookupResult{None: true}, nil // nothing can ever start in it
	})
	h[protocol.MethodJobStart] = b.guard(h[protocol.MethodJobStart], func(unclear bool, why string) (any, error) {
		if unclear {
			return nil, protocol.Errorf(protocol.Retryable, "job.start: %s: nothing was started", why)
		}
		return nil, protocol.Errorf(protocol.Permanent, "job.start: %s: nothing was started", why)
	})
	return h
}

// guard serves next only in a running pod. A pod that is gone (or ended)
// decides the answer alone (unclear false), as does one the cluster does
// not describe (unclear true: the API server does not answer, the pod is
// being deleted or not ready).
func (b *Backend) guard(next protocol.Handler, answer func(unclear bool, why string) (any, error)) protocol.Handler {
	return func(ctx context.Context, call *protocol.Call) (any, error) {
		st, _, why, err := b.podState(ctx, call.Base.Target)
		switch {
		case err != nil:
			return nil, err
		case st == podUp:
			return next(ctx, call)
		case st == podGone:
			return answer(false, why)
		}
		if why == "" {
			why = "pod " + call.Base.Target.Host.Handle + " is not running"
		}
		return answer(true, why)
	}
}

// jobsFor is the Jobs of the pod a call's target names (a host of this
// instance).
func (b *Backend) jobsFor(ctx context.Context, t protocol.Target) (*tmuxjob.Jobs, error) {
	pod, err := b.hostOf(ctx, t)
	if err != nil {
		return nil, err
	}
	root, err := b.jobsRoot(ctx, pod)
	if err != nil {
		return nil, err
	}
	self, env := b.cfg.Self, b.cfg.Target.Env()
	return tmuxjob.New(b.pool(pod), tmuxjob.Options{
		Root: root, Kind: ChannelName, Channel: ChannelName,
		View: func(handle, _ string) protocol.View {
			return tmuxjob.ViewArgv(env, self, ViewCommand, "--pod", pod, "--root", root, handle)
		},
	})
}

// jobsRoot is the pod's jobs directory: $HOME/.mu-jobs of the container's
// user (asked once per pod per invocation).
func (b *Backend) jobsRoot(ctx context.Context, pod string) (string, error) {
	b.mu.Lock()
	root, ok := b.roots[pod]
	b.mu.Unlock()
	if ok {
		return root, nil
	}
	out, _, code, err := b.pool(pod).Run(ctx, []string{"/bin/sh", "-c", `cd && pwd -P`}, nil)
	if err != nil {
		return "", protocol.Wrap(protocol.Retryable, err, "finding the login directory in pod "+pod)
	}
	home := strings.TrimSpace(string(out))
	if code != 0 || !path.IsAbs(home) {
		return "", protocol.Errorf(protocol.Permanent, "pod %s: the container's user has no usable login directory (%q)", pod, home)
	}
	root = path.Join(home, JobsDir)
	if home == "/" {
		root = "/" + JobsDir
	}
	b.mu.Lock()
	b.roots[pod] = root
	b.mu.Unlock()
	return root, nil
}
