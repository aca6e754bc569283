package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/internal/gitlink"
	"github.com/mu-org/mu-plugins/protocol"
)

// reachSteps are the reach phase's steps, in order; an ssh:// endpoint's
// have "ssh" (its SSH connection) after "endpoint".
var reachSteps = []string{"endpoint", "ping", "api", "image", "container", "git"}

func (b *Backend) reachSteps() []string {
	if b.ssh == nil {
		return reachSteps
	}
	return append([]string{reachSteps[0], "ssh"}, reachSteps[1:]...)
}

// CheckSteps serves link.checkSteps. The reach phase: the endpoint (and
// what chose it), Engine ping (bounded by ReachTimeout), API version,
// image present, container running, git present. Other phases have no
// steps of this plugin's.
func (b *Backend) CheckSteps(ctx context.Context, call *protocol.Call, p protocol.CheckStepsParams) ([]protocol.Step, error) {
	s := gitlink.NewSteps(b.reachSteps()...)
	if p.Phase != protocol.PhaseReach {
		return s.List(), nil
	}
	ep := b.cfg.Endpoint
	s.Pass("endpoint", fmt.Sprintf("%s, chosen by %s (instance %s)", ep, ep.Source, b.instance))
	if b.ssh != nil {
		cl, err := b.ssh.connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			s.Fail("ssh", withRemedy(err))
			return s.SkipRest("no SSH connection to the Engine's host"), nil
		}
		s.Pass("ssh", b.ssh.detail(cl))
	}
	ping, err := b.ping(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		s.Fail("ping", withRemedy(err))
		return s.SkipRest("the Engine is unreachable"), nil
	}
	b.reached.Store(true)
	s.Pass("ping", fmt.Sprintf("the Docker Engine at %s answered", ep.Host))
	s.Pass("api", fmt.Sprintf("API %s (Engine offers %s)", b.api.ClientVersion(), ping.APIVersion))
	if ctr := p.Target.Host.Handle; ctr != "" {
		b.hostSteps(ctx, s, ctr)
		return s.List(), nil
	}
	switch image := b.cfg.Image; {
	case image == "":
		s.Warn("image", "no --image: every acquire must pass --param image=IMAGE (docs/docker.md, Images)")
	default:
		b.imageStep(ctx, s, image)
	}
	s.Skip("container", "no host handle in the target")
	return s.SkipRest("no running container"), nil
}

// hostSteps are the image, container and git steps of a host's container.
func (b *Backend) hostSteps(ctx context.Context, s *gitlink.Steps, ctr string) {
	ins, err := b.api.ContainerInspect(ctx, ctr, client.ContainerInspectOptions{})
	if err != nil {
		s.Skip("image", "no container to read the image from")
		s.Fail("container", fmt.Sprintf("container %s: %v", short(ctr), err))
		s.SkipRest("no running container")
		return
	}
	image := b.cfg.Image
	if ins.Container.Config != nil {
		image = ins.Container.Config.Image
	}
	b.imageStep(ctx, s, image)
	if ins.Container.State == nil || !ins.Container.State.Running {
		s.Fail("container", fmt.Sprintf("container %s is not running", short(ctr)))
		s.SkipRest("no running container")
		return
	}
	b.containerStep(ctx, s, ctr)
	r, err := b.hosts.Pool(ctr).Script(ctx, "git --version", ".", 10*time.Second)
	switch {
	case err != nil:
		s.Fail("git", fmt.Sprintf("exec in the container: %v", err))
	case r.ExitCode == nil || *r.ExitCode != 0:
		s.Fail("git", "git is missing in the container: "+strings.TrimSpace(r.Stderr))
	default:
		s.Pass("git", strings.TrimSpace(r.Stdout))
	}
}

func (b *Backend) imageStep(ctx context.Context, s *gitlink.Steps, image string) {
	if _, err := b.api.ImageInspect(ctx, image); err != nil {
		s.Fail("image", fmt.Sprintf("image %s: %v", image, err))
		return
	}
	s.Pass("image", "image "+image+" is present")
}

// withRemedy is an error's text with its remedy, for a step's detail.
func withRemedy(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Remedy != "" {
		return pe.Message + "; remedy: " + pe.Remedy
	}
	return err.Error()
}
