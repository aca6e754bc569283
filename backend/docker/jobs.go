package docker

import (
	"context"
	"fmt"
	"os"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/internal/sandbox"
	"github.com/mu-org/mu-plugins/protocol"
)

// ViewCommand is the sub-command a job's view runs: it follows the job's
// terminal output through the Engine (docs/docker.md).
const ViewCommand = sandbox.ViewCommand

// jobHandlers are the job.* and channel.* handlers (sandbox.Hosts'
// JobHandlers): tmuxjob's over the container's Runner, with job.start,
// lookup, status and stop answering from the container's state first when
// it is not running.
func (b *Backend) jobHandlers() protocol.Methods {
	return b.hosts.JobHandlers("docker", b.cfg.Channel, b.jobView, b.containerState)
}

// jobView carries the Engine's address to the view, which mu runs in a
// local pane whose environment may not be the plugin's.
func (b *Backend) jobView() sandbox.JobView {
	return sandbox.JobView{Env: b.cfg.Endpoint.PinEnv(os.Getenv), HostArg: "--container"}
}

// containerState inspects the call's container, for the job calls: a
// paused or restarting container, or an Engine that does not answer, is
// unclear; an exited, dead or never started one is stopped (none of its
// processes runs). A container that is not this instance's host is an
// error.
func (b *Backend) containerState(ctx context.Context, t protocol.Target) (sandbox.State, string, error) {
	ctr, err := b.hosts.Handle(t)
	if err != nil {
		return sandbox.Unclear, "", err
	}
	ins, err := b.api.ContainerInspect(ctx, ctr, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		b.dropPool(ctr)
		return sandbox.Gone, "container " + short(ctr) + " no longer exists", nil
	}
	if err != nil {
		return sandbox.Unclear, "the Docker Engine: " + err.Error(), nil
	}
	l := labelsOf(ins.Container)
	if l[LabelPlugin] != "docker" || l[LabelInstance] != b.instance || l[LabelFence] == "1" {
		return sandbox.Unclear, "", protocol.Errorf(protocol.Permanent, "container %s is not a host of instance %q", short(ctr), b.instance)
	}
	st := ins.Container.State
	switch {
	case st == nil:
		return sandbox.Unclear, "the Engine reported no state", nil
	case st.Paused:
		return sandbox.Unclear, "container " + short(ctr) + " is paused", nil
	case st.Restarting:
		return sandbox.Unclear, "container " + short(ctr) + " is restarting", nil
	case st.Running:
		return sandbox.Running, "", nil
	}
	b.dropPool(ctr)
	return sandbox.Stopped, fmt.Sprintf("container %s is %s: its processes are gone", short(ctr), st.Status), nil
}
