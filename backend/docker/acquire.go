package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/internal/execchan"
	"github.com/mu-org/mu-plugins/internal/hostresult"
	"github.com/mu-org/mu-plugins/protocol"
)

// containerName is the key's container name. The name is the Engine's only
// atomic compare-and-set: a second create under it conflicts, so a key has
// at most one container, and a fence placeholder under it refuses a late
// acquire.
func (b *Backend) containerName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return b.cfg.Prefix + "-" + hex.EncodeToString(sum[:16])
}

// Acquire serves host.acquire: create (or find) the key's container, start
// it, and answer once an exec in it answers. Repeating it converges on the
// same container and the same result.
func (b *Backend) Acquire(ctx context.Context, call *protocol.Call, p protocol.AcquireParams) (protocol.AcquireResult, error) {
	spec, err := parseParams(p.Params, b.cfg.Image)
	if err != nil {
		return protocol.AcquireResult{}, err
	}
	if err := b.refuseRoot(ctx, spec); err != nil {
		return protocol.AcquireResult{}, err
	}
	b.defaultLimits(ctx, &spec)
	name := b.containerName(p.Key)
	res := spec.Result(time.Now())
	labels := b.labels(p.Key)
	labels[LabelParams] = hostresult.Digest(p.Params)
	labels[LabelResult] = res.String()
	labels[LabelCreator] = b.hosts.Me().String()
	b.hosts.InFlight(p.Key, 1)
	defer b.hosts.InFlight(p.Key, -1)

	t0 := time.Now()
	id, res, err := b.create(ctx, name, p.Key, spec, labels, res)
	if err != nil {
		return protocol.AcquireResult{}, err
	}
	t1 := time.Now()
	if _, err := b.api.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		if client.IsErrConnectionFailed(err) || ctx.Err() != nil {
			return protocol.AcquireResult{}, protocol.Wrap(protocol.UnknownOutcome, err, "starting container "+name)
		}
		// The Engine refused to start it: remove it, so nothing is held.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if _, rerr := b.api.ContainerRemove(rctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); rerr != nil && !cerrdefs.IsNotFound(rerr) {
			return protocol.AcquireResult{}, protocol.Wrap(protocol.UnknownOutcome, errors.Join(err, rerr), "starting container "+name+" failed and removing it too")
		}
		if e := missingNetwork(spec, err); e != nil {
			return protocol.AcquireResult{}, e
		}
		return protocol.AcquireResult{}, protocol.Wrap(protocol.Permanent, err, "the Engine could not start container "+name+" (removed)")
	}
	t2 := time.Now()
	if err := b.ready(ctx, id); err != nil {
		return protocol.AcquireResult{}, protocol.Wrap(protocol.UnknownOutcome, err, "container "+name+" started but no exec answered")
	}
	b.log.Debug("acquired", "container", name, "createMs", t1.Sub(t0).Milliseconds(),
		"startMs", t2.Sub(t1).Milliseconds(), "readyMs", time.Since(t2).Milliseconds())
	return *res.With(id), nil
}

// create creates the key's container, or finds the one a previous acquire
// of the key created. A name the Engine still reserves for a create in
// flight (or one being rolled back: a conflict whose inspect finds nothing)
// is retried until the name resolves.
func (b *Backend) create(ctx context.Context, name, key string, spec acquireSpec, labels map[string]string, res storedResult) (string, storedResult, error) {
	for attempt := 0; ; attempt++ {
		created, err := b.api.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:       name,
			Config:     hostConfig(spec, labels, res),
			HostConfig: hostHostConfig(spec),
		})
		switch {
		case err == nil:
			return created.ID, res, nil
		case cerrdefs.IsConflict(err):
			id, old, err := b.existing(ctx, name, key, labels[LabelParams])
			if err == nil || !errors.Is(err, errNameInLimbo) || attempt >= 100 {
				return id, old, err
			}
			select {
			case <-ctx.Done():
				return "", res, protocol.Wrap(protocol.UnknownOutcome, ctx.Err(), "container name "+name+" stayed reserved")
			case <-time.After(50 * time.Millisecond):
			}
		case client.IsErrConnectionFailed(err):
			return "", res, protocol.Wrap(protocol.Retryable, err, "the Docker Engine is unreachable")
		case missingNetwork(spec, err) != nil:
			return "", res, missingNetwork(spec, err)
		case cerrdefs.IsNotFound(err):
			return "", res, protocol.Errorf(protocol.Permanent, "image %q is not on the Engine (this plugin never pulls): build or load it, or pass --param image=…", spec.Image)
		case cerrdefs.IsInvalidArgument(err):
			return "", res, protocol.Wrap(protocol.Permanent, err, "the Engine refused the container")
		default:
			return "", res, protocol.Wrap(protocol.UnknownOutcome, err, "creating container "+name)
		}
	}
}

// missingNetwork is the error for a network param the Engine does not know
// (at create or at start, depending on the Engine), else nil.
func missingNetwork(s acquireSpec, err error) error {
	if s.Network == "" || !cerrdefs.IsNotFound(err) || !strings.Contains(err.Error(), "network") {
		return nil
	}
	return protocol.Wrap(protocol.Permanent, err, fmt.Sprintf("network %q is not on the Engine: create it (docker network create), or pass another network=", s.Network))
}

// errNameInLimbo: a create conflicted but no container has the name (yet, or
// any more): the Engine reserves a name while a create is in flight.
var errNameInLimbo = errors.New("container name reserved by a create in flight")

// existing resolves a create that conflicted: the key's container, if it is
// one this key acquired with these params.
func (b *Backend) existing(ctx context.Context, name, key, digest string) (string, storedResult, error) {
	ins, err := b.api.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return "", storedResult{}, errNameInLimbo
	}
	if err != nil {
		return "", storedResult{}, protocol.Wrap(protocol.UnknownOutcome, err, "inspecting container "+name)
	}
	c := ins.Container
	l := labelsOf(c)
	switch {
	case l[LabelFence] == "1":
		return "", storedResult{}, protocol.Errorf(protocol.Permanent, "key is fenced: a fenced host.lookup answered none for it, so it can never be acquired")
	case l[LabelKey] != key || l[LabelPlugin] != "docker":
		return "", storedResult{}, protocol.HumanError("remove or rename the container, or use another --prefix",
			"container name %s is taken by a container that is not this key's", name)
	case l[LabelInstance] != b.instance:
		return "", storedResult{}, protocol.Errorf(protocol.Permanent, "container %s belongs to instance %q, not %q", name, l[LabelInstance], b.instance)
	case l[LabelParams] != digest:
		return "", storedResult{}, protocol.Errorf(protocol.Permanent, "key was already acquired with other params")
	}
	res, err := parseResult(l[LabelResult])
	if err != nil {
		return "", storedResult{}, protocol.Wrap(protocol.Permanent, err, "container "+name)
	}
	return c.ID, res, nil
}

// ready waits until an exec in ctr answers (over a pooled channel, which
// later link calls reuse).
func (b *Backend) ready(ctx context.Context, ctr string) error {
	for {
		r, err := b.hosts.Pool(ctr).Script(ctx, "true", ".", 30*time.Second)
		if err == nil && r.ExitCode != nil && *r.ExitCode == 0 {
			return nil
		}
		if err == nil {
			err = errors.New("the readiness exec did not exit 0")
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// hostConfig is a host container's config: its command (under the
// Engine's init, tini, so that orphans are reaped) waits, and exits 0 at
// the result's deadline and once the host has been idle for its
// idleReclaimMs (execchan.HostCommand): the container then stops, and
// host.status removes it and reads gone.
func hostConfig(s acquireSpec, labels map[string]string, res storedResult) *container.Config {
	argv := execchan.HostCommand(res.DeadlineAt, s.Idle)
	return &container.Config{
		Image:      s.Image,
		User:       s.User,
		Entrypoint: argv[:1],
		Cmd:        argv[1:],
		Labels:     labels,
	}
}

// hostHostConfig holds the security defaults: not privileged, no host
// namespace, no mounts, no published ports, no new privileges, an init
// process, a process limit; and the params' limits, network and dropped
// capabilities.
func hostHostConfig(s acquireSpec) *container.HostConfig {
	init := true
	pids := s.Pids
	return &container.HostConfig{
		Init:            &init,
		Privileged:      false,
		PublishAllPorts: false,
		NetworkMode:     container.NetworkMode(s.Network),
		CapDrop:         s.CapDrop,
		SecurityOpt:     []string{"no-new-privileges"},
		Resources:       container.Resources{NanoCPUs: s.NanoCPUs, Memory: s.Memory, PidsLimit: &pids},
	}
}

func labelsOf(c container.InspectResponse) map[string]string {
	if c.Config == nil {
		return nil
	}
	return c.Config.Labels
}
