package k8s

import (
	"context"

	"github.com/mu-org/mu-plugins/internal/sandbox"
	"github.com/mu-org/mu-plugins/protocol"
)

// ViewCommand is the sub-command a job's view runs: it follows the job's
// terminal output over pods/exec (docs/k8s.md).
const ViewCommand = sandbox.ViewCommand

// jobHandlers are the job.* and channel.* handlers (sandbox.Hosts'
// JobHandlers): tmuxjob's over the pod's Runner (its pooled exec
// channels), with job.start, lookup, status and stop answering from the
// pod's state first when it is not running.
func (b *Backend) jobHandlers() protocol.Methods {
	return b.hosts.JobHandlers(ChannelName, ChannelName, func() sandbox.JobView {
		return sandbox.JobView{Env: b.cfg.Target.Env(), HostArg: "--pod"}
	}, b.jobState)
}

// jobState is the pod's state for the job calls: a pod that is gone (or
// ended) decides the answer alone, as does one the cluster does not
// describe (unclear: the API server does not answer, the pod is being
// deleted or not ready).
func (b *Backend) jobState(ctx context.Context, t protocol.Target) (sandbox.State, string, error) {
	st, _, why, err := b.podState(ctx, t)
	switch {
	case err != nil:
		return sandbox.Unclear, "", err
	case st == podUp:
		return sandbox.Running, "", nil
	case st == podGone:
		return sandbox.Gone, why, nil
	}
	if why == "" {
		why = "pod " + t.Host.Handle + " is not running"
	}
	return sandbox.Unclear, why, nil
}
