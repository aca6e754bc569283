package gitlink

import "github.com/mu-org/mu-plugins/protocol"

// Steps builds one phase's check steps (link.checkSteps, job.checkSteps),
// in the phase's order. A step that fails can end the phase: SkipRest
// reports every step of the order not reported yet as skipped (null), so
// the answer always names every step, as `mu host check` prints them.
type Steps struct {
	order []string
	list  []protocol.Step
}

// NewSteps starts a phase whose steps, in order, are order.
func NewSteps(order ...string) *Steps {
	return &Steps{order: order, list: []protocol.Step{}}
}

// Add reports a step.
func (s *Steps) Add(name string, ok protocol.StepOK, detail string) {
	s.list = append(s.list, protocol.Step{Step: name, OK: ok, Detail: detail})
}

// Pass reports a step that passed.
func (s *Steps) Pass(name, detail string) { s.Add(name, protocol.StepPassed, detail) }

// Warn reports a step that passed with a warning.
func (s *Steps) Warn(name, detail string) { s.Add(name, protocol.StepWarn, detail) }

// Skip reports a step that did not run.
func (s *Steps) Skip(name, detail string) { s.Add(name, protocol.StepSkipped, detail) }

// Fail reports a step that failed; the phase goes on.
func (s *Steps) Fail(name, detail string) { s.Add(name, protocol.StepFailed, detail) }

// SkipRest reports every step of the order after the ones reported so far
// as skipped, with why as each one's detail, and returns the phase's steps.
func (s *Steps) SkipRest(why string) []protocol.Step {
	if n := len(s.list); n < len(s.order) {
		for _, name := range s.order[n:] {
			s.Skip(name, why)
		}
	}
	return s.list
}

// FailRest reports a step that failed and ends the phase: every later step
// is skipped ("skipped: NAME failed"). It returns the phase's steps.
func (s *Steps) FailRest(name, detail string) []protocol.Step {
	s.Fail(name, detail)
	return s.SkipRest("skipped: " + name + " failed")
}

// List is the phase's steps so far (never nil: an empty phase is []).
func (s *Steps) List() []protocol.Step { return s.list }
