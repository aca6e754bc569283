package docker

import (
	"context"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/protocol"
)

// Release serves host.release: force-remove the key's container with its
// anonymous volumes. A container already gone resolves to null. A fence
// placeholder stays: the fence is forever (see docs/docker.md for removing
// placeholders by label).
func (b *Backend) Release(ctx context.Context, call *protocol.Call, p protocol.KeyParams) (protocol.Null, error) {
	name := b.containerName(p.Key)
	ins, err := b.api.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return protocol.Null{}, nil
	}
	if err != nil {
		return protocol.Null{}, engineErr(err, "inspecting container "+name)
	}
	l := labelsOf(ins.Container)
	if l[LabelFence] == "1" {
		return protocol.Null{}, nil
	}
	if l[LabelKey] != p.Key {
		return protocol.Null{}, protocol.HumanError("remove or rename the container, or use another --prefix",
			"container name %s is taken by a container that is not this key's", name)
	}
	b.dropPool(ins.Container.ID)
	_, err = b.api.ContainerRemove(ctx, ins.Container.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err == nil || cerrdefs.IsNotFound(err) {
		return protocol.Null{}, nil
	}
	if client.IsErrConnectionFailed(err) {
		return protocol.Null{}, protocol.Wrap(protocol.Retryable, err, "the Docker Engine is unreachable")
	}
	if cerrdefs.IsConflict(err) {
		// "removal … is already in progress": an earlier release (a plugin
		// killed mid-call) is removing it. Released is a proof, so wait for
		// the container to be gone.
		if werr := b.waitGone(ctx, ins.Container.ID); werr == nil {
			return protocol.Null{}, nil
		}
	}
	return protocol.Null{}, protocol.Wrap(protocol.UnknownOutcome, err, "removing container "+name)
}

// waitGone polls until the container no longer exists, or ctx ends.
func (b *Backend) waitGone(ctx context.Context, id string) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		_, err := b.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
