package docker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/protocol"
)

// checkSteps serves link.checkSteps. The reach phase: Engine ping, API
// version, image present, container running, git present. Other phases
// have no steps of this plugin's.
func (b *Backend) checkSteps(ctx context.Context, call *protocol.Call) (any, error) {
	var p protocol.CheckStepsParams
	if err := call.Decode(&p); err != nil {
		return nil, err
	}
	if err := b.checkInstance(p.Target); err != nil {
		return nil, err
	}
	steps := []protocol.Step{}
	if p.Phase != protocol.PhaseReach {
		return steps, nil
	}
	add := func(step string, ok protocol.StepOK, format string, args ...any) {
		steps = append(steps, protocol.Step{Step: step, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	skipRest := func(from int, why string) []protocol.Step {
		for _, s := range []string{"ping", "api", "image", "container", "git"}[from:] {
			add(s, protocol.StepSkipped, "%s", why)
		}
		return steps
	}
	ping, err := b.api.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	if err != nil {
		add("ping", protocol.StepFailed, "the Docker Engine did not answer: %v", err)
		return skipRest(1, "the Engine is unreachable"), nil
	}
	add("ping", protocol.StepPassed, "the Docker Engine answered")
	add("api", protocol.StepPassed, "API %s (Engine offers %s)", b.api.ClientVersion(), ping.APIVersion)

	image := b.cfg.Image
	ctr := p.Target.Host.Handle
	var running bool
	if ctr != "" {
		ins, err := b.api.ContainerInspect(ctx, ctr, client.ContainerInspectOptions{})
		switch {
		case err != nil:
			add("image", protocol.StepSkipped, "no container to read the image from")
			add("container", protocol.StepFailed, "container %s: %v", short(ctr), err)
		default:
			if ins.Container.Config != nil {
				image = ins.Container.Config.Image
			}
			if _, err := b.api.ImageInspect(ctx, image); err != nil {
				add("image", protocol.StepFailed, "image %s: %v", image, err)
			} else {
				add("image", protocol.StepPassed, "image %s is present", image)
			}
			running = ins.Container.State != nil && ins.Container.State.Running
			if running {
				add("container", protocol.StepPassed, "container %s is running", short(ctr))
			} else {
				add("container", protocol.StepFailed, "container %s is not running", short(ctr))
			}
		}
	} else {
		if _, err := b.api.ImageInspect(ctx, image); err != nil {
			add("image", protocol.StepFailed, "image %s: %v", image, err)
		} else {
			add("image", protocol.StepPassed, "image %s is present", image)
		}
		add("container", protocol.StepSkipped, "no host handle in the target")
	}
	if !running {
		add("git", protocol.StepSkipped, "no running container")
		return steps, nil
	}
	r, err := b.runScript(ctx, ctr, "git --version", ".", 10*time.Second)
	switch {
	case err != nil:
		add("git", protocol.StepFailed, "exec in the container: %v", err)
	case r.ExitCode == nil || *r.ExitCode != 0:
		add("git", protocol.StepFailed, "git is missing in the container: %s", strings.TrimSpace(r.Stderr))
	default:
		add("git", protocol.StepPassed, "%s", strings.TrimSpace(r.Stdout))
	}
	return steps, nil
}
