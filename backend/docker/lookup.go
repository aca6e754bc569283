package docker

import (
	"context"
	"errors"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/protocol"
)

// Lookup serves host.lookup: found (acquire's result), pending (created, not
// ready), none, or unknown. With fence, a none is made final by a
// never-started placeholder under the key's name: a late acquire's create
// then conflicts and refuses.
func (b *Backend) Lookup(ctx context.Context, call *protocol.Call, p protocol.LookupParams) (protocol.HostLookupResult, error) {
	name := b.containerName(p.Key)
	for attempt := 0; attempt < 100; attempt++ {
		ins, err := b.api.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			if !p.Fence {
				return protocol.HostLookupResult{None: true}, nil
			}
			if err := b.placeFence(ctx, name, p.Key); err != nil {
				if cerrdefs.IsConflict(err) {
					// Something holds the name: a container (look again) or a
					// create in flight, which the Engine reserves the name for.
					select {
					case <-ctx.Done():
						return protocol.HostLookupResult{Unknown: "container name " + name + " stayed reserved"}, nil
					case <-time.After(50 * time.Millisecond):
					}
					continue
				}
				return protocol.HostLookupResult{Unknown: "placing the fence: " + err.Error()}, nil
			}
			return protocol.HostLookupResult{None: true}, nil
		}
		if err != nil {
			return protocol.HostLookupResult{Unknown: "the Docker Engine: " + err.Error()}, nil
		}
		if b.abandoned(ins.Container, p.Key) {
			// An acquire created it and will never start it: its creator is
			// gone (or, when that cannot be checked, no acquire runs this
			// long). Roll it back, then answer as for nothing (a fenced
			// lookup places its fence at once). Not forced: a container
			// started meanwhile refuses, and is looked at again.
			_, err := b.api.ContainerRemove(ctx, ins.Container.ID, client.ContainerRemoveOptions{RemoveVolumes: true})
			switch {
			case err == nil:
				b.log.Info("removed a container an acquire created and never started", "container", name,
					"creator", labelsOf(ins.Container)[LabelCreator])
			case cerrdefs.IsConflict(err): // started meanwhile, or already being removed
				select {
				case <-ctx.Done():
					return protocol.HostLookupResult{Unknown: "removing an abandoned container: " + err.Error()}, nil
				case <-time.After(50 * time.Millisecond):
				}
			case !cerrdefs.IsNotFound(err):
				return protocol.HostLookupResult{Unknown: "removing an abandoned container: " + err.Error()}, nil
			}
			continue
		}
		return b.lookupFound(ctx, ins.Container, p.Key), nil
	}
	return protocol.HostLookupResult{Unknown: "container " + name + " stayed reserved by a create in flight"}, nil
}

// abandoned tells a container that an acquire created and will never
// start: never started, and its creator (LabelCreator) no longer runs. A
// creator this process cannot check (another machine's or boot's plugin,
// another pid namespace, no label) counts as gone only once the container
// is older than AbandonAfter (by default the declared inFlightMs: no
// Acquire still runs then). Lookup rolls it back instead of answering
// pending.
func (b *Backend) abandoned(c container.InspectResponse, key string) bool {
	l := labelsOf(c)
	if l[LabelFence] == "1" || l[LabelKey] != key || l[LabelInstance] != b.instance ||
		c.State == nil || c.State.Status != container.StateCreated {
		return false
	}
	return b.hosts.Abandoned(l[LabelCreator], key, func() bool {
		created, err := time.Parse(time.RFC3339Nano, c.Created)
		return err == nil && time.Since(created) > b.cfg.AbandonAfter
	})
}

func (b *Backend) lookupFound(ctx context.Context, c container.InspectResponse, key string) protocol.HostLookupResult {
	l := labelsOf(c)
	switch {
	case l[LabelFence] == "1":
		return protocol.HostLookupResult{None: true}
	case l[LabelKey] != key:
		return protocol.HostLookupResult{Unknown: "container name " + c.Name + " is taken by a container that is not this key's"}
	case l[LabelInstance] != b.instance:
		return protocol.HostLookupResult{Unknown: "container " + c.Name + " belongs to instance " + l[LabelInstance]}
	}
	res, err := parseResult(l[LabelResult])
	if err != nil {
		return protocol.HostLookupResult{Unknown: err.Error()}
	}
	if c.State == nil || c.State.Status == container.StateCreated {
		return protocol.HostLookupResult{Pending: true}
	}
	if c.State.Running {
		// Ready means an exec answers, as for acquire.
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		r, err := b.hosts.Pool(c.ID).Script(rctx, "true", ".", 10*time.Second)
		if err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
			return protocol.HostLookupResult{Pending: true}
		}
	}
	// Running and ready, or acquired and since stopped (host.status says so).
	return protocol.HostLookupResult{Found: res.With(c.ID)}
}

// placeFence creates the never-started placeholder that makes none final.
func (b *Backend) placeFence(ctx context.Context, name, key string) error {
	image, err := b.fenceImage(ctx)
	if err != nil {
		return err
	}
	labels := b.labels(key)
	labels[LabelFence] = "1"
	_, err = b.api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:   name,
		Config: &container.Config{Image: image, Entrypoint: []string{"true"}, Labels: labels},
		HostConfig: &container.HostConfig{
			NetworkMode: "none",
		},
	})
	return err
}

// fenceImage is the image a placeholder is created from (it never runs):
// --image, else any image already on the Engine (the Engine creates no
// container without one).
func (b *Backend) fenceImage(ctx context.Context) (string, error) {
	if b.cfg.Image != "" {
		return b.cfg.Image, nil
	}
	imgs, err := b.api.ImageList(ctx, client.ImageListOptions{})
	if err != nil {
		return "", err
	}
	if len(imgs.Items) == 0 {
		return "", errors.New("no image on the Engine to create the fence placeholder from: set --image")
	}
	return imgs.Items[0].ID, nil
}
