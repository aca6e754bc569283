package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Method names, exactly as they appear on the wire.
const (
	MethodInitialize = "initialize"
	MethodShutdown   = "shutdown"
	MethodCancel     = "$/cancel"

	MethodHostAcquire = "host.acquire"
	MethodHostLookup  = "host.lookup"
	MethodHostStatus  = "host.status"
	MethodHostRelease = "host.release"

	MethodLinkExec       = "link.exec"
	MethodLinkFetch      = "link.fetch"
	MethodLinkPush       = "link.push"
	MethodLinkCheckSteps = "link.checkSteps"

	MethodJobStart      = "job.start"
	MethodJobLookup     = "job.lookup"
	MethodJobStatus     = "job.status"
	MethodJobStop       = "job.stop"
	MethodJobAttach     = "job.attach"
	MethodJobCheckSteps = "job.checkSteps"

	MethodChannelReadStates = "channel.readStates"
	MethodChannelBaseline   = "channel.baseline"
	MethodChannelReceipt    = "channel.receipt"
	MethodChannelLastRun    = "channel.lastRun"
	MethodChannelWatch      = "channel.watch"
	MethodChannelSend       = "channel.send"
	MethodChannelFresh      = "channel.fresh"
	MethodChannelCommand    = "channel.command"
	MethodChannelInterrupt  = "channel.interrupt"
	MethodChannelAbort      = "channel.abort"
	MethodChannelAnswer     = "channel.answer"

	// The only two notifications a plugin may send.
	NotifyWatchSettled   = "watch/settled"
	NotifyWatchRestarted = "watch/restarted"
)

// Effects lists the methods the spec calls effects: mu journals their intent
// before sending them, and resolves them after a crash.
var Effects = map[string]bool{
	MethodHostAcquire: true, MethodHostRelease: true,
	MethodJobStart: true, MethodJobStop: true,
	MethodChannelSend: true, MethodChannelFresh: true, MethodChannelCommand: true,
	MethodChannelInterrupt: true, MethodChannelAbort: true, MethodChannelAnswer: true,
}

// ---- handshake ----

// VersionRange is the protocol range mu offers.
type VersionRange struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// InitializeParams is what mu sends first.
type InitializeParams struct {
	Protocol VersionRange `json:"protocol"`
	Mu       string       `json:"mu"`
}

// PluginInfo names the plugin in the handshake.
type PluginInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// InitializeResult is the plugin's answer to initialize: its declaration.
type InitializeResult struct {
	Protocol int        `json:"protocol"`
	Plugin   PluginInfo `json:"plugin"`
	Instance string     `json:"instance"`
	Schema   string     `json:"schema"`
	Seams    Seams      `json:"seams"`
}

// CancelParams is $/cancel: exactly one of ID (a pending call's envelope id)
// or WatchID (a watch to end).
type CancelParams struct {
	ID      json.RawMessage `json:"id,omitempty"`
	WatchID string          `json:"watchId,omitempty"`
}

// ---- every call ----

// Target carries the identity a call needs.
type Target struct {
	Agent *AgentRef `json:"agent,omitempty"`
	Job   *JobRef   `json:"job,omitempty"`
	Host  HostRef   `json:"host"`
}

// AgentRef names an agent of mu's: <workstream>/<name>, and mu's own
// incarnation counter for it.
type AgentRef struct {
	Workstream  string `json:"workstream"`
	Name        string `json:"name"`
	Incarnation int64  `json:"incarnation"`
}

// Key is the "<workstream>/<name>" form the channel's readings are keyed by.
func (a AgentRef) Key() string { return a.Workstream + "/" + a.Name }

// JobRef names a job record.
type JobRef struct {
	Kind   string `json:"kind"`
	Key    string `json:"key"`
	Handle string `json:"handle,omitempty"`
}

// HostRef names a host: a profile name, and for a provider host its handle
// and instance.
type HostRef struct {
	Name     string `json:"name"`
	Handle   string `json:"handle,omitempty"`
	Instance string `json:"instance,omitempty"`
}

// Base is embedded in every request's params: the call's deadline (epoch ms)
// and its target.
type Base struct {
	Deadline int64  `json:"deadline"`
	Target   Target `json:"target"`
}

// ---- host ----

type AcquireParams struct {
	Base
	Key    string            `json:"key"`
	Params map[string]string `json:"params"`
}

// AcquireResult is host.acquire's result, and host.lookup's found.
type AcquireResult struct {
	Handle        string `json:"handle"`
	DeadlineAt    *int64 `json:"deadlineAt,omitempty"`
	IdleReclaimMs *int64 `json:"idleReclaimMs,omitempty"`
	MaxJobs       *int   `json:"maxJobs,omitempty"`
}

// LookupParams is host.lookup's and job.lookup's params.
type LookupParams struct {
	Base
	Key   string `json:"key"`
	Fence bool   `json:"fence"`
}

// HostLookupResult holds exactly one of its fields.
type HostLookupResult struct {
	Found   *AcquireResult `json:"found,omitempty"`
	Pending bool           `json:"pending,omitempty"`
	None    bool           `json:"none,omitempty"`
	Unknown string         `json:"unknown,omitempty"`
}

// HostState is a host.status state.
type HostState string

// Host states.
const (
	HostUp         HostState = "up"
	HostGone       HostState = "gone"
	HostNeedsHuman HostState = "needs-human"
	HostUnknown    HostState = "unknown"
)

// HostStatus is host.status's result. Facts are the up state's patch over the
// facts mu last recorded (deadlineAt, idleReclaimMs, maxJobs): a key mapped
// to JSON null clears that fact, an absent key keeps it.
type HostStatus struct {
	State  HostState                  `json:"state"`
	Handle string                     `json:"handle,omitempty"`
	Reason string                     `json:"reason,omitempty"`
	Remedy string                     `json:"remedy,omitempty"`
	Facts  map[string]json.RawMessage `json:"-"`
}

// MarshalJSON flattens Facts beside the state.
func (h HostStatus) MarshalJSON() ([]byte, error) {
	type plain HostStatus
	b, err := json.Marshal(plain(h))
	if err != nil || len(h.Facts) == 0 {
		return b, err
	}
	keys := make([]string, 0, len(h.Facts))
	for k := range h.Facts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1])
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		v := h.Facts[k]
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		fmt.Fprintf(&buf, ",%s:%s", kb, v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads the facts back out of the flat object.
func (h *HostStatus) UnmarshalJSON(b []byte) error {
	type plain HostStatus
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for _, k := range []string{"state", "handle", "reason", "remedy"} {
		delete(all, k)
	}
	if len(all) > 0 {
		p.Facts = all
	}
	*h = HostStatus(p)
	return nil
}

// KeyParams is host.release's and job.stop's params.
type KeyParams struct {
	Base
	Key string `json:"key"`
}

// ---- link ----

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

type FetchParams struct {
	Base
	RemoteCwd string `json:"remoteCwd"`
	LocalRepo string `json:"localRepo"`
	TimeoutMs int64  `json:"timeoutMs"`
}

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

// ---- job ----

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

// JobLookupResult holds exactly one of its fields.
type JobLookupResult struct {
	Found   *JobFound `json:"found,omitempty"`
	Pending bool      `json:"pending,omitempty"`
	None    bool      `json:"none,omitempty"`
	Unknown string    `json:"unknown,omitempty"`
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

type JobStatus struct {
	State  JobState `json:"state"`
	Exit   *int     `json:"exit,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// ---- channel ----

// Turn states.
const (
	TurnIdle    = "idle"
	TurnBusy    = "busy"
	TurnBlocked = "blocked"
	TurnUnknown = "unknown"
)

// AgentName names an agent in channel.readStates's targets.
type AgentName struct {
	Workstream string `json:"workstream"`
	Name       string `json:"name"`
}

type ReadStatesParams struct {
	Base
	Targets []AgentName `json:"targets"`
}

// Reading is one agent's turn state in channel.readStates. Since is epoch ms.
type Reading struct {
	State       string `json:"state"`
	Since       int64  `json:"since"`
	Runs        int64  `json:"runs"`
	Incarnation string `json:"incarnation"`
	Reason      string `json:"reason,omitempty"`
	Pending     string `json:"pending,omitempty"`
}

type ReceiptParams struct {
	Base
	MsgID string `json:"msgId"`
}

// Receipt states.
const (
	ReceiptAccepted    = "accepted"
	ReceiptNotAccepted = "not-accepted"
	ReceiptUnreachable = "unreachable"
)

type Receipt struct {
	State       string `json:"state"`
	ID          string `json:"id"`
	Runs        *int64 `json:"runs,omitempty"`
	At          *int64 `json:"at,omitempty"`
	Incarnation string `json:"incarnation,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

type LastRunParams struct {
	Base
	AfterRuns int64  `json:"afterRuns"`
	Inc       string `json:"inc,omitempty"`
}

// Observation is a turn as the channel saw it. Status is a turn state;
// Settled tells whether the turn has settled.
type Observation struct {
	Status            string `json:"status"`
	Settled           bool   `json:"settled"`
	Since             int64  `json:"since"`
	Runs              int64  `json:"runs"`
	Incarnation       string `json:"incarnation"`
	Reason            string `json:"reason,omitempty"`
	Pending           string `json:"pending,omitempty"`
	LastText          string `json:"lastText,omitempty"`
	LastTextTruncated bool   `json:"lastTextTruncated,omitempty"`
	LastError         string `json:"lastError,omitempty"`
}

type WatchParams struct {
	Base
	AfterRuns *int64 `json:"afterRuns,omitempty"`
	Inc       string `json:"inc,omitempty"`
}

type WatchResult struct {
	WatchID   string      `json:"watchId"`
	Initial   Observation `json:"initial"`
	AfterRuns *int64      `json:"afterRuns,omitempty"`
}

// WatchSettled is the watch/settled notification's params.
type WatchSettled struct {
	WatchID     string      `json:"watchId"`
	Observation Observation `json:"observation"`
}

// WatchRestarted is the watch/restarted notification's params.
type WatchRestarted struct {
	WatchID     string `json:"watchId"`
	Incarnation string `json:"incarnation"`
}

// Send modes.
const (
	ModeFollowUp = "followUp"
	ModeSteer    = "steer"
)

type SendParams struct {
	Base
	Text              string `json:"text"`
	MsgID             string `json:"msgId"`
	Mode              string `json:"mode"`
	Force             bool   `json:"force"`
	FirstPrompt       bool   `json:"firstPrompt"`
	ExpectIncarnation string `json:"expectIncarnation,omitempty"`
}

type FreshParams struct {
	Base
	Text              string `json:"text"`
	MsgID             string `json:"msgId"`
	Force             bool   `json:"force"`
	ExpectIncarnation string `json:"expectIncarnation,omitempty"`
}

type CommandParams struct {
	Base
	Name              string `json:"name"`
	Instructions      string `json:"instructions,omitempty"`
	Force             bool   `json:"force"`
	ExpectIncarnation string `json:"expectIncarnation,omitempty"`
}

// Acks.
const (
	AckConfirmed = "confirmed"
	AckUnknown   = "unknown"
)

// SendResult answers send, fresh and command. Baseline is the turn count
// before the turn the delivery started.
type SendResult struct {
	Channel  string `json:"channel"`
	Ack      string `json:"ack"`
	Baseline *int64 `json:"baseline,omitempty"`
	MsgID    string `json:"msgId,omitempty"`
}

type InterruptParams struct {
	Base
	Text              string `json:"text"`
	MsgID             string `json:"msgId"`
	TimeoutMs         int64  `json:"timeoutMs"`
	ExpectIncarnation string `json:"expectIncarnation,omitempty"`
}

type InterruptResult struct {
	WasBusy     bool   `json:"wasBusy"`
	Pending     bool   `json:"pending"`
	Runs        *int64 `json:"runs,omitempty"`
	MsgID       string `json:"msgId,omitempty"`
	Incarnation string `json:"incarnation,omitempty"`
}

type AbortParams struct {
	Base
	TimeoutMs int64 `json:"timeoutMs"`
}

// AbortResult: Before and After are "idle" or "busy".
type AbortResult struct {
	Before  string `json:"before"`
	After   string `json:"after"`
	Settled bool   `json:"settled"`
	Aborted bool   `json:"aborted"`
	Pending bool   `json:"pending"`
}

type AnswerParams struct {
	Base
	Keys  []string `json:"keys"`
	Force bool     `json:"force"`
}

type AnswerResult struct {
	Keys []string `json:"keys"`
	Ack  string   `json:"ack"`
}
