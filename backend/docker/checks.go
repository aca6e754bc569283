package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/client"

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

// steps collects a phase's steps, of the given order.
type steps struct {
	order []string
	list  []protocol.Step
}

func (s *steps) add(step string, ok protocol.StepOK, format string, args ...any) {
	s.list = append(s.list, protocol.Step{Step: step, OK: ok, Detail: fmt.Sprintf(format, args...)})
}

// skipRest marks every step after the last one added as skipped.
func (s *steps) skipRest(why string) {
	for _, name := range s.order[len(s.list):] {
		s.add(name, protocol.StepSkipped, "%s", why)
	}
}

// checkSteps serves link.checkSteps. The reach phase: the endpoint (and
// what chose it), Engine ping (bounded by ReachTimeout), API version,
// image present, container running, git present. Other phases have no
// steps of this plugin's.
func (b *Backend) checkSteps(ctx context.Context, call *protocol.Call) (any, error) {
	var p protocol.CheckStepsParams
	if err := call.Decode(&p); err != nil {
		return nil, err
	}
	if err := b.checkInstance(p.Target); err != nil {
		return nil, err
	}
	s := steps{order: b.reachSteps(), list: []protocol.Step{}}
	if p.Phase != protocol.PhaseReach {
		return s.list, nil
	}
	ep := b.cfg.Endpoint
	s.add("endpoint", protocol.StepPassed, "%s, chosen by %s (instance %s)", ep, ep.Source, b.instance)
	if b.ssh != nil {
		cl, err := b.ssh.connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			s.add("ssh", protocol.StepFailed, "%s", withRemedy(err))
			s.skipRest("no SSH connection to the Engine's host")
			return s.list, nil
		}
		s.add("ssh", protocol.StepPassed, "%s", b.ssh.detail(cl))
	}
	ping, err := b.ping(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		s.add("ping", protocol.StepFailed, "%s", withRemedy(err))
		s.skipRest("the Engine is unreachable")
		return s.list, nil
	}
	b.reached.Store(true)
	s.add("ping", protocol.StepPassed, "the Docker Engine at %s answered", ep.Host)
	s.add("api", protocol.StepPassed, "API %s (Engine offers %s)", b.api.ClientVersion(), ping.APIVersion)
	if ctr := p.Target.Host.Handle; ctr != "" {
		b.hostSteps(ctx, &s, ctr)
		return s.list, nil
	}
	switch image := b.cfg.Image; {
	case image == "":
		s.add("image", protocol.StepWarn, "no --image: every acquire must pass --param image=IMAGE (docs/docker.md, Images)")
	default:
		b.imageStep(ctx, &s, image)
	}
	s.add("container", protocol.StepSkipped, "no host handle in the target")
	s.skipRest("no running container")
	return s.list, nil
}

// hostSteps are the image, container and git steps of a host's container.
func (b *Backend) hostSteps(ctx context.Context, s *steps, ctr string) {
	ins, err := b.api.ContainerInspect(ctx, ctr, client.ContainerInspectOptions{})
	if err != nil {
		s.add("image", protocol.StepSkipped, "no container to read the image from")
		s.add("container", protocol.StepFailed, "container %s: %v", short(ctr), err)
		s.skipRest("no running container")
		return
	}
	image := b.cfg.Image
	if ins.Container.Config != nil {
		image = ins.Container.Config.Image
	}
	b.imageStep(ctx, s, image)
	if ins.Container.State == nil || !ins.Container.State.Running {
		s.add("container", protocol.StepFailed, "container %s is not running", short(ctr))
		s.skipRest("no running container")
		return
	}
	s.add("container", protocol.StepPassed, "container %s is running", short(ctr))
	r, err := b.runScript(ctx, ctr, "git --version", ".", 10*time.Second)
	switch {
	case err != nil:
		s.add("git", protocol.StepFailed, "exec in the container: %v", err)
	case r.ExitCode == nil || *r.ExitCode != 0:
		s.add("git", protocol.StepFailed, "git is missing in the container: %s", strings.TrimSpace(r.Stderr))
	default:
		s.add("git", protocol.StepPassed, "%s", strings.TrimSpace(r.Stdout))
	}
}

func (b *Backend) imageStep(ctx context.Context, s *steps, image string) {
	if _, err := b.api.ImageInspect(ctx, image); err != nil {
		s.add("image", protocol.StepFailed, "image %s: %v", image, err)
		return
	}
	s.add("image", protocol.StepPassed, "image %s is present", image)
}

// withRemedy is an error's text with its remedy, for a step's detail.
func withRemedy(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Remedy != "" {
		return pe.Message + "; remedy: " + pe.Remedy
	}
	return err.Error()
}
