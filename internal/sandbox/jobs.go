package sandbox

import (
	"context"

	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// JobsDir is where a host keeps its jobs (tmuxjob's state root), under the
// login directory of the host's user.
const JobsDir = ".mu-jobs"

// ViewCommand is the sub-command a job's view runs: it follows the job's
// terminal output through the provider.
const ViewCommand = "view"

// State is what the provider says of a host, for the job calls.
type State int

const (
	Running State = iota
	Stopped       // it exists but none of its processes runs (it may run again)
	Gone          // it does not exist, or ended for good
	Unclear       // the provider did not say (no answer, paused, starting, being deleted)
)

// JobView is how a job's view reaches host: the view sub-command's
// environment and the flag that names the host ("--container", "--pod").
type JobView struct {
	Env     map[string]string
	HostArg string
}

// JobHandlers are the job.* and channel.* handlers: tmuxjob's over the
// host's pooled exec channels (kind and channel as declared), with
// job.start, lookup, status and stop answering from the host's state
// (state) first when it is not running.
func (h *Hosts) JobHandlers(kind, channel string, view func() JobView, state func(ctx context.Context, t protocol.Target) (State, string, error)) protocol.Methods {
	m := tmuxjob.Handlers(func(ctx context.Context, t protocol.Target) (*tmuxjob.Jobs, error) {
		return h.jobsFor(ctx, t, kind, channel, view)
	})
	guard := func(next protocol.Handler, answer func(st State, why string) (any, error)) protocol.Handler {
		return func(ctx context.Context, call *protocol.Call) (any, error) {
			st, why, err := state(ctx, call.Base.Target)
			if err != nil {
				return nil, err
			}
			if st == Running {
				return next(ctx, call)
			}
			return answer(st, why)
		}
	}
	for method, answer := range notRunning {
		m[method] = guard(m[method], answer)
	}
	return m
}

// notRunning are the job calls' answers on a host that is not running,
// from its state alone: nothing is run.
var notRunning = map[string]func(st State, why string) (any, error){
	// A job on a host that stopped or is gone is lost (no exit was
	// recorded that could still be read); unclear is unknown.
	protocol.MethodJobStatus.Name: func(st State, why string) (any, error) {
		if st == Unclear {
			return protocol.MethodJobStatus.Answer(protocol.JobStatus{State: protocol.JobUnknown, Reason: why})
		}
		return protocol.MethodJobStatus.Answer(protocol.JobStatus{State: protocol.JobLost, Reason: why})
	},
	// Nothing runs on a host that stopped or is gone, which is the proof
	// job.stop's null needs. When the provider does not say, nothing is
	// done: retryable.
	protocol.MethodJobStop.Name: func(st State, why string) (any, error) {
		if st == Unclear {
			return nil, protocol.Errorf(protocol.Retryable, "job.stop: %s: nothing was done", why)
		}
		return protocol.MethodJobStop.Answer(protocol.Null{})
	},
	// No job can be found, nor ever start, on a host that is gone: none
	// (fenced or not). Stopped or unclear: unknown.
	protocol.MethodJobLookup.Name: func(st State, why string) (any, error) {
		if st == Gone {
			return protocol.MethodJobLookup.Answer(protocol.JobLookupResult{None: true})
		}
		return protocol.MethodJobLookup.Answer(protocol.JobLookupResult{Unknown: why})
	},
	// A host that is gone or stopped starts nothing: a definite refusal.
	// When the provider does not say, retryable.
	protocol.MethodJobStart.Name: func(st State, why string) (any, error) {
		if st == Unclear {
			return nil, protocol.Errorf(protocol.Retryable, "job.start: %s: nothing was started", why)
		}
		return nil, protocol.Errorf(protocol.Permanent, "job.start: %s: nothing was started", why)
	},
}

// jobsFor is the Jobs of the host a call's target names (a host of this
// instance).
func (h *Hosts) jobsFor(ctx context.Context, t protocol.Target, kind, channel string, view func() JobView) (*tmuxjob.Jobs, error) {
	host, err := h.HostOf(ctx, t)
	if err != nil {
		return nil, err
	}
	root, err := h.JobsRoot(ctx, host)
	if err != nil {
		return nil, err
	}
	self := h.self
	return tmuxjob.New(h.Pool(host), tmuxjob.Options{
		Root: root, Kind: kind, Channel: channel, Watches: h.watches.Of(host),
		// The plugin created this host (a container, a pod): its home is
		// the plugin's (docs/harness.md "What the plugin writes in a home").
		OwnsHome: true,
		View: func(handle, _ string) protocol.View {
			v := view()
			return tmuxjob.ViewArgv(v.Env, self, ViewCommand, v.HostArg, host, "--root", root, handle)
		},
	})
}

// JobsRoot is host's jobs directory: JobsDir under the login directory of
// the host's user (asked once per host per invocation).
func (h *Hosts) JobsRoot(ctx context.Context, host string) (string, error) {
	return h.roots.Get(ctx, host, h.Pool(host), JobsDir, h.p.HostName(host))
}
