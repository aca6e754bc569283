package tmuxjob

import (
	"context"
	"fmt"
	"strings"

	"github.com/mu-org/mu-plugins/protocol"
)

// CheckSteps is job.checkSteps for any phase: whether the host has what
// jobs need (tmux 3.2+, the scripts' tools, a writable state root), and
// how a watch waits (on the change itself, or by looks), and which agent
// CLIs the adapters wire are present, with their versions (a step that
// informs, never fails). Step names: tmux, tools, state-root, watch,
// agents.
func (j *Jobs) CheckSteps(ctx context.Context, phase string) ([]protocol.Step, error) {
	o, err := j.run(ctx, "check", "0", nil, fmt.Sprintf("%.3f", j.opts.Poll.Seconds()))
	if err != nil {
		return []protocol.Step{{Step: "tmux", OK: protocol.StepFailed, Detail: err.Error()}}, nil
	}
	var steps []protocol.Step
	for _, name := range []string{"tmux", "tools", "state-root", "watch", "agents"} {
		s := protocol.Step{Step: name, OK: protocol.StepSkipped, Detail: "not reported"}
		for _, l := range o.all("step") {
			n, rest, _ := strings.Cut(l, " ")
			if n != name {
				continue
			}
			ok, detail, _ := strings.Cut(rest, " ")
			s.OK, s.Detail = protocol.StepFailed, detail
			if ok == "ok" {
				s.OK = protocol.StepPassed
			}
		}
		steps = append(steps, s)
	}
	return j.withRemedies(steps), nil
}
