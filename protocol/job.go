package protocol

// The job seam's wire types (the spec's "The job").

// FirstPrompt is an at-start kind's first delivery, carried by job.start.
type FirstPrompt struct {
	Text  string `json:"text"`
	MsgID string `json:"msgId"`
}

// JobSpec is the whole spec of a job, as mu sends it to job.start.
// Cmd is a POSIX sh command line.
type JobSpec struct {
	Workstream    string            `json:"workstream"`
	Name          string            `json:"name"`
	Harness       string            `json:"harness"`
	Role          string            `json:"role"`
	Cmd           string            `json:"cmd"`
	CommandSource string            `json:"commandSource"`
	Cwd           string            `json:"cwd"`
	Env           map[string]string `json:"env"`
	Sockets       []string          `json:"sockets,omitempty"`
	FirstPrompt   *FirstPrompt      `json:"firstPrompt,omitempty"`
}

// JobStartParams is job.start's params: Key, the job record's token, and
// the whole JobSpec.
type JobStartParams struct {
	Base
	Key  string  `json:"key"`
	Spec JobSpec `json:"spec"`
}

// View is what mu runs in a local pane: Command is a POSIX sh command line,
// run with stdin from /dev/null, Env added to its environment.
type View struct {
	Command string            `json:"command"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd,omitempty"`
}

// Baseline is a turn count (and the channel session it counts in).
type Baseline struct {
	Runs        int64  `json:"runs"`
	Incarnation string `json:"incarnation,omitempty"`
}

// JobStartResult is job.start's result: the View mu runs in a pane; Handle
// when the kind's handle is "reply"; Baseline (runs 0) from an at-start
// kind.
type JobStartResult struct {
	View     View      `json:"view"`
	Handle   string    `json:"handle,omitempty"`
	Baseline *Baseline `json:"baseline,omitempty"`
}

// JobFound is job.lookup's found.
type JobFound struct {
	Handle   string    `json:"handle"`
	View     *View     `json:"view,omitempty"`
	Baseline *Baseline `json:"baseline,omitempty"`
}

// JobState is a job.status state.
type JobState string

// Job states.
const (
	JobRunning JobState = "running"
	JobEnded   JobState = "ended"
	JobLost    JobState = "lost"
	JobUnknown JobState = "unknown"
)

// JobStatus is job.status's result: State, with Exit once ended and Reason
// when lost or unknown.
type JobStatus struct {
	State  JobState `json:"state"`
	Exit   *int     `json:"exit,omitempty"`
	Reason string   `json:"reason,omitempty"`
}
