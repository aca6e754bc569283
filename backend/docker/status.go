package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/protocol"
)

// Status serves host.status: up with its facts, gone only as proof (the
// container does not exist, or it ended itself by its terms and is
// removed now), needs-human when it stopped otherwise, unknown when the
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
	if st.Status == container.StateExited && st.ExitCode == 0 && !st.OOMKilled {
		return b.ended(ctx, c.ID, name), nil
	}
	why := fmt.Sprintf("container %s is %s (exit code %d)", name, st.Status, st.ExitCode)
	if st.OOMKilled {
		why = fmt.Sprintf("container %s was OOM-killed (exit code %d)", name, st.ExitCode)
	}
	return protocol.HostStatus{State: protocol.HostNeedsHuman,
		Remedy: why + fmt.Sprintf(": see docker logs %s and docker inspect %s; then docker start %s, or release the host (mu host release)", name, name, name)}, nil
}

// ended answers for a container whose main process exited 0: it ended
// itself at its deadline or after its idle time (execchan.HostCommand).
// Nothing of it runs; it is removed, so that nothing can start it again
// and gone is a proof.
func (b *Backend) ended(ctx context.Context, id, name string) protocol.HostStatus {
	_, err := b.api.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		if !cerrdefs.IsConflict(err) || b.waitGone(ctx, id) != nil {
			return protocol.HostStatus{State: protocol.HostUnknown, Reason: "container " + name + " ended itself (its ttl or idle time) but removing it failed: " + err.Error()}
		}
	}
	return protocol.HostStatus{State: protocol.HostGone, Reason: "container " + name + " ended itself at its deadline or after its idle time (removed)"}
}
