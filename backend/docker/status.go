package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/protocol"
)

// Status serves host.status: up with its facts, gone only as proof (the
// container does not exist), needs-human when it stopped, unknown when the
// Engine does not say.
func (b *Backend) Status(ctx context.Context, call *protocol.Call, p protocol.Base) (protocol.HostStatus, error) {
	ctr, err := b.hosts.Handle(p.Target)
	if err != nil {
		return protocol.HostStatus{}, err
	}
	ins, err := b.api.ContainerInspect(ctx, ctr, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		b.dropPool(ctr)
		return protocol.HostStatus{State: protocol.HostGone, Reason: "container " + short(ctr) + " no longer exists"}, nil
	}
	if err != nil {
		return protocol.HostStatus{State: protocol.HostUnknown, Reason: "the Docker Engine: " + err.Error()}, nil
	}
	c := ins.Container
	st := c.State
	name := c.Name
	if len(name) > 0 && name[0] == '/' {
		name = name[1:]
	}
	switch {
	case st == nil:
		return protocol.HostStatus{State: protocol.HostUnknown, Reason: "the Engine reported no state"}, nil
	case st.Running && !st.Paused && !st.Restarting:
		res, err := parseResult(labelsOf(c)[LabelResult])
		if err != nil {
			return protocol.HostStatus{State: protocol.HostUnknown, Reason: err.Error()}, nil
		}
		return protocol.HostStatus{State: protocol.HostUp, Handle: c.ID, Facts: res.Facts()}, nil
	case st.Paused:
		return protocol.HostStatus{State: protocol.HostNeedsHuman,
			Remedy: fmt.Sprintf("container %s is paused: docker unpause %s, or release the host", name, name)}, nil
	case st.Restarting:
		return protocol.HostStatus{State: protocol.HostUnknown, Reason: "container " + name + " is restarting"}, nil
	}
	b.dropPool(ctr)
	why := fmt.Sprintf("container %s is %s (exit code %d)", name, st.Status, st.ExitCode)
	if st.OOMKilled {
		why = fmt.Sprintf("container %s was OOM-killed (exit code %d)", name, st.ExitCode)
	}
	return protocol.HostStatus{State: protocol.HostNeedsHuman,
		Remedy: why + fmt.Sprintf(": see docker logs %s and docker inspect %s; then docker start %s, or release the host (mu host release)", name, name, name)}, nil
}
