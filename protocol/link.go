package protocol

import (
	"fmt"
)

// The link seam's wire types (the spec's "The link").

// ExecParams is link.exec's params: Script (POSIX sh) run in Cwd ("." is
// the login directory), cut at TimeoutMs (0: the spec's 20 s; RunTimeout
// reads it).
type ExecParams struct {
	Base
	Script    string `json:"script"`
	Cwd       string `json:"cwd"`
	TimeoutMs int64  `json:"timeoutMs"`
}

// ExecResult is the result of link.exec, link.fetch and link.push. ExitCode
// is nil (JSON null) when the run timed out.
type ExecResult struct {
	ExitCode *int   `json:"exitCode"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	Partial  bool   `json:"partial"`
}

// FetchParams is link.fetch's params: fetch RemoteCwd's HEAD into
// LocalRepo, whose FETCH_HEAD then names it, within TimeoutMs.
type FetchParams struct {
	Base
	RemoteCwd string `json:"remoteCwd"`
	LocalRepo string `json:"localRepo"`
	TimeoutMs int64  `json:"timeoutMs"`
}

// PushParams is link.push's params: make RemoteRepo (created as a git
// repository if absent) hold Rev, a full sha, from LocalRepo, within
// TimeoutMs. A repo that already holds it succeeds untouched.
type PushParams struct {
	Base
	LocalRepo  string `json:"localRepo"`
	RemoteRepo string `json:"remoteRepo"`
	Rev        string `json:"rev"`
	TimeoutMs  int64  `json:"timeoutMs"`
}

// Check phases.
const (
	PhaseTemplate = "template"
	PhaseReach    = "reach"
	PhaseAgent    = "agent"
)

// CheckStepsParams is link.checkSteps's and job.checkSteps's params (Root is
// the link's only).
type CheckStepsParams struct {
	Base
	Phase string `json:"phase"`
	Root  string `json:"root,omitempty"`
	Agent string `json:"agent,omitempty"`
}

// StepOK is a step's outcome: true, false, null (skipped) or "warn".
type StepOK struct{ v string }

var (
	StepPassed  = StepOK{"true"}
	StepFailed  = StepOK{"false"}
	StepSkipped = StepOK{"null"}
	StepWarn    = StepOK{`"warn"`}
)

func (s StepOK) MarshalJSON() ([]byte, error) {
	if s.v == "" {
		return []byte("null"), nil
	}
	return []byte(s.v), nil
}

func (s *StepOK) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true", "false", "null", `"warn"`:
		s.v = string(b)
		return nil
	}
	return fmt.Errorf("step ok: %s is not true, false, null or \"warn\"", b)
}

// String gives "true", "false", "null" or "warn".
func (s StepOK) String() string {
	if s.v == `"warn"` {
		return "warn"
	}
	if s.v == "" {
		return "null"
	}
	return s.v
}

// Step is one check step.
type Step struct {
	Step   string `json:"step"`
	OK     StepOK `json:"ok"`
	Detail string `json:"detail"`
}
