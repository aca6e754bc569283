package k8s

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/internal/gitlink"
	"github.com/mu-org/mu-plugins/protocol"
)

// reachSteps are the reach phase's steps, in order.
var reachSteps = []string{"cluster", "api", "pod", "git"}

// CheckSteps serves link.checkSteps. The reach phase: the cluster (and
// what chose it), the API server's answer (bounded by ReachTimeout), the
// host's pod running, git present in it. Other phases have no steps of
// this plugin's.
func (b *Backend) CheckSteps(ctx context.Context, call *protocol.Call, p protocol.CheckStepsParams) ([]protocol.Step, error) {
	s := gitlink.NewSteps(reachSteps...)
	if p.Phase != protocol.PhaseReach {
		return s.List(), nil
	}
	t := b.cfg.Target
	s.Pass("cluster", fmt.Sprintf("%s, context %q, namespace %s, chosen by %s (instance %s)", t.REST.Host, t.Context, b.ns, t.Source, b.instance))
	v, err := b.version(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		s.Fail("api", withRemedy(err))
		return s.SkipRest("the API server is unreachable"), nil
	}
	b.reached.Store(true)
	s.Pass("api", "the API server answered: "+oneLine(v))
	pod := p.Target.Host.Handle
	if pod == "" {
		s.Skip("pod", "no host handle in the target")
		return s.SkipRest("no pod"), nil
	}
	if st, _, why, err := b.podState(ctx, p.Target); err != nil || st != podUp {
		if err != nil {
			why = withRemedy(err)
		}
		s.Fail("pod", why)
		return s.SkipRest("no running pod"), nil
	}
	s.Pass("pod", "pod "+pod+" is running")
	r, err := b.hosts.Pool(pod).Script(ctx, "git --version", ".", 10*time.Second)
	switch {
	case err != nil:
		s.Fail("git", fmt.Sprintf("exec in the pod: %v", err))
	case r.ExitCode == nil || *r.ExitCode != 0:
		s.Fail("git", "git is missing in the pod: "+strings.TrimSpace(r.Stderr))
	default:
		s.Pass("git", strings.TrimSpace(r.Stdout))
	}
	return s.List(), nil
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// withRemedy is an error's text with its remedy, for a step's detail.
func withRemedy(err error) string {
	if pe, ok := err.(*protocol.Error); ok && pe.Remedy != "" {
		return pe.Message + "; remedy: " + pe.Remedy
	}
	return err.Error()
}
