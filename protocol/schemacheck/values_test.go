package schemacheck

import (
	"encoding/json"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/schemas"
)

// Realistic values of every wire type, marshalled by encoding/json exactly
// as a plugin or mu writes them: each with every optional field set
// ("full"), and with none ("minimal").

func i64(n int64) *int64 { return &n }
func intp(n int) *int    { return &n }

var (
	fullTarget = protocol.Target{
		Agent: &protocol.AgentRef{Workstream: "ws", Name: "alice", Incarnation: 3},
		Job:   &protocol.JobRef{Kind: "claude", Key: "job-7f3a", Handle: "h-12"},
		Host:  protocol.HostRef{Name: "box", Handle: "i-0abc", Instance: "prod-eu"},
	}
	minTarget = protocol.Target{Host: protocol.HostRef{Name: "box"}}
	fullBase  = protocol.Base{Deadline: 1767225600000, Target: fullTarget}
	minBase   = protocol.Base{Deadline: 1767225600000, Target: minTarget}
)

var fullDecl = protocol.InitializeResult{
	Protocol: 1,
	Plugin:   protocol.PluginInfo{Name: "box", Version: "0.1.0"},
	Instance: "prod-eu",
	Schema:   schemas.V1Digest(),
	Seams: protocol.Seams{
		Link: &protocol.LinkSeam{Fetch: true, Push: protocol.Bool(true), Slots: protocol.SlotsSelf,
			RemoteOnTimeout: protocol.RemoteStopping, Quiescence: protocol.QuiescenceProvable,
			MaxScriptBytes: 131072, Checks: []string{protocol.PhaseTemplate, protocol.PhaseReach, protocol.PhaseAgent}},
		Job: &protocol.JobSeam{Kind: "claude", View: protocol.ViewDetached, Handle: protocol.HandleReply,
			Start: protocol.KeyCaps{Lookup: true, FenceKey: true,
				Dedupe: &protocol.Dedupe{Exact: true, WindowMs: 600000}, InFlightMs: i64(30000)},
			Channel: "claude", Checks: []string{protocol.PhaseAgent},
			FirstTurn: protocol.FirstTurnAtStart, OutlivesHost: protocol.Bool(true),
			Honours: &protocol.Honours{Command: true, Env: true, Sockets: true, Roles: []string{"full-access", "read-only"}}},
		Host: &protocol.HostSeam{Acquire: protocol.KeyCaps{Lookup: true, FenceKey: true,
			Dedupe: &protocol.Dedupe{Exact: true, WindowMs: 60000}, InFlightMs: i64(120000)}},
		Channel: &protocol.ChannelSeam{Name: "claude", Caps: protocol.ChannelCaps{
			Fence: "none", Receipt: "exact", Dedupe: "exact", Steer: "native", Interrupt: "native",
			Fresh: "in-place", Answer: true, Command: true, Watch: "stream", SettleText: "truncated"}},
	},
}

var minDecl = protocol.InitializeResult{
	Protocol: 1,
	Plugin:   protocol.PluginInfo{Name: "box", Version: "0.1.0"},
	Instance: "i",
	Schema:   schemas.V1Digest(),
	Seams: protocol.Seams{Link: &protocol.LinkSeam{Slots: protocol.SlotsMu, RemoteOnTimeout: protocol.RemoteUnknown,
		Quiescence: protocol.QuiescenceUnprovable, MaxScriptBytes: 1, Checks: []string{}}},
}

var fullObs = protocol.Observation{Status: protocol.TurnBlocked, Settled: true, Since: 1767225600000, Runs: 4,
	Incarnation: "sess-2", Reason: "waiting", Pending: "Allow edit?", LastText: "done.", LastTextTruncated: true,
	LastError: "rate limited"}
var minObs = protocol.Observation{Status: protocol.TurnIdle, Since: 0, Runs: 0, Incarnation: ""}

var fullSpec = protocol.JobSpec{Workstream: "ws", Name: "alice", Harness: "claude", Role: "full-access",
	Cmd: "claude --resume 'x y'", CommandSource: "harness", Cwd: "/work/tree", Env: map[string]string{"A": "1"},
	Sockets: []string{"/run/mu/ctl.sock"}, FirstPrompt: &protocol.FirstPrompt{Text: "hello", MsgID: "m-1"}}
var minSpec = protocol.JobSpec{Workstream: "ws", Name: "alice", Harness: "claude", Role: "full-access",
	Cmd: "claude", CommandSource: "harness", Cwd: ".", Env: map[string]string{}}

var fullView = protocol.View{Command: "tmux attach -t =a:", Env: map[string]string{"TERM": "xterm"}, Cwd: "/w"}
var minView = protocol.View{Command: "sh", Env: map[string]string{}}

// cases: method → example params and results (each marshalled and checked).
type cases struct {
	params  []any
	results []any
}

func exec0() *int { return intp(0) }

var examples = map[string]cases{
	protocol.MethodInitialize.Name: {
		params:  []any{protocol.InitializeParams{Protocol: protocol.VersionRange{Min: 1, Max: 1}, Mu: "5"}},
		results: []any{fullDecl, minDecl},
	},
	protocol.MethodShutdown.Name: {
		params:  []any{nil, struct{}{}},
		results: []any{nil},
	},
	protocol.MethodCancel.Name: {
		params: []any{protocol.CancelParams{ID: json.RawMessage("7")}, protocol.CancelParams{ID: json.RawMessage(`"abc"`)},
			protocol.CancelParams{WatchID: "w-1"}},
	},
	protocol.MethodHostAcquire.Name: {
		params: []any{protocol.AcquireParams{Base: fullBase, Key: "eff-1", Params: map[string]string{"size": "large"}},
			protocol.AcquireParams{Base: minBase, Key: "eff-1", Params: map[string]string{}}},
		results: []any{protocol.AcquireResult{Handle: "i-0abc", DeadlineAt: i64(1767229200000), IdleReclaimMs: i64(900000), MaxJobs: intp(4)},
			protocol.AcquireResult{Handle: "i-0abc"}},
	},
	protocol.MethodHostLookup.Name: {
		params: []any{protocol.LookupParams{Base: fullBase, Key: "eff-1", Fence: true}, protocol.LookupParams{Base: minBase, Key: "eff-1"}},
		results: []any{
			protocol.HostLookupResult{Found: &protocol.AcquireResult{Handle: "i-0abc", DeadlineAt: i64(1767229200000), IdleReclaimMs: i64(1), MaxJobs: intp(1)}},
			protocol.HostLookupResult{Found: &protocol.AcquireResult{Handle: "i-0abc"}},
			protocol.HostLookupResult{Pending: true}, protocol.HostLookupResult{None: true},
			protocol.HostLookupResult{Unknown: "provider API unreachable"},
		},
	},
	protocol.MethodHostStatus.Name: {
		params: []any{fullBase, minBase},
		results: []any{
			protocol.HostStatus{State: protocol.HostUp, Handle: "i-0abc"},
			protocol.HostStatus{State: protocol.HostUp, Handle: "i-0abc", Facts: map[string]json.RawMessage{
				"deadlineAt": json.RawMessage("1767229200000"), "idleReclaimMs": nil, "maxJobs": json.RawMessage("2")}},
			protocol.HostStatus{State: protocol.HostUp, Handle: "i-0abc", Facts: map[string]json.RawMessage{
				"deadlineAt": json.RawMessage("null"), "idleReclaimMs": json.RawMessage("null"), "maxJobs": json.RawMessage("null")}},
			protocol.HostStatus{State: protocol.HostGone, Reason: "terminated"},
			protocol.HostStatus{State: protocol.HostNeedsHuman, Remedy: "renew the lease"},
			protocol.HostStatus{State: protocol.HostUnknown, Reason: "timeout"},
		},
	},
	protocol.MethodHostRelease.Name: {
		params:  []any{protocol.KeyParams{Base: fullBase, Key: "eff-1"}, protocol.KeyParams{Base: minBase, Key: "eff-1"}},
		results: []any{nil},
	},
	protocol.MethodLinkExec.Name: {
		params: []any{protocol.ExecParams{Base: fullBase, Script: "echo hi\n", Cwd: ".", TimeoutMs: 20000},
			protocol.ExecParams{Base: minBase, Script: "", Cwd: ".", TimeoutMs: 0}},
		results: []any{protocol.ExecResult{ExitCode: intp(2), Stdout: "hi\n", Stderr: "warn\n", Partial: true},
			protocol.ExecResult{}, protocol.ExecResult{ExitCode: exec0()}},
	},
	protocol.MethodLinkFetch.Name: {
		params:  []any{protocol.FetchParams{Base: fullBase, RemoteCwd: "/w/tree", LocalRepo: "/home/u/repo", TimeoutMs: 20000}},
		results: []any{protocol.ExecResult{ExitCode: exec0()}},
	},
	protocol.MethodLinkPush.Name: {
		params: []any{protocol.PushParams{Base: fullBase, LocalRepo: "/home/u/repo", RemoteRepo: "/w/repo",
			Rev: "0123456789abcdef0123456789abcdef01234567", TimeoutMs: 20000}},
		results: []any{protocol.ExecResult{ExitCode: exec0()}},
	},
	protocol.MethodLinkCheckSteps.Name: {
		params: []any{protocol.CheckStepsParams{Base: fullBase, Phase: protocol.PhaseReach, Root: "/w", Agent: "ws/alice"},
			protocol.CheckStepsParams{Base: minBase, Phase: protocol.PhaseTemplate}},
		results: []any{[]protocol.Step{{Step: "dial", OK: protocol.StepPassed, Detail: "ok"}, {Step: "auth", OK: protocol.StepFailed},
			{Step: "git", OK: protocol.StepSkipped}, {Step: "disk", OK: protocol.StepWarn, Detail: "90% full"}, {Step: "zero"}},
			[]protocol.Step{}},
	},
	protocol.MethodJobStart.Name: {
		params: []any{protocol.JobStartParams{Base: fullBase, Key: "job-7f3a", Spec: fullSpec},
			protocol.JobStartParams{Base: minBase, Key: "job-7f3a", Spec: minSpec}},
		results: []any{protocol.JobStartResult{View: fullView, Handle: "h-12", Baseline: &protocol.Baseline{Runs: 0, Incarnation: "s-1"}},
			protocol.JobStartResult{View: minView}},
	},
	protocol.MethodJobLookup.Name: {
		params: []any{protocol.LookupParams{Base: fullBase, Key: "job-7f3a", Fence: true}},
		results: []any{
			protocol.JobLookupResult{Found: &protocol.JobFound{Handle: "h-12", View: &fullView, Baseline: &protocol.Baseline{Runs: 0, Incarnation: "s-1"}}},
			protocol.JobLookupResult{Found: &protocol.JobFound{Handle: "h-12"}},
			protocol.JobLookupResult{Pending: true}, protocol.JobLookupResult{None: true}, protocol.JobLookupResult{Unknown: "engine down"},
		},
	},
	protocol.MethodJobStatus.Name: {
		params: []any{fullBase, minBase},
		results: []any{protocol.JobStatus{State: protocol.JobRunning}, protocol.JobStatus{State: protocol.JobEnded, Exit: intp(0)},
			protocol.JobStatus{State: protocol.JobEnded, Exit: intp(137)},
			protocol.JobStatus{State: protocol.JobLost, Reason: "container gone"}, protocol.JobStatus{State: protocol.JobUnknown, Reason: "engine down"}},
	},
	protocol.MethodJobStop.Name: {
		params:  []any{protocol.KeyParams{Base: fullBase, Key: "job-7f3a"}},
		results: []any{nil},
	},
	protocol.MethodJobAttach.Name: {
		params:  []any{fullBase},
		results: []any{fullView, minView},
	},
	protocol.MethodJobCheckSteps.Name: {
		params: []any{protocol.CheckStepsParams{Base: fullBase, Phase: protocol.PhaseAgent, Agent: "ws/alice"},
			protocol.CheckStepsParams{Base: minBase, Phase: protocol.PhaseAgent}},
		results: []any{[]protocol.Step{{Step: "handback", OK: protocol.StepFailed, Detail: "log in"}}},
	},
	protocol.MethodChannelReadStates.Name: {
		params: []any{protocol.ReadStatesParams{Base: fullBase, Targets: []protocol.AgentName{{Workstream: "ws", Name: "alice"}}},
			protocol.ReadStatesParams{Base: minBase, Targets: []protocol.AgentName{}}},
		results: []any{
			map[string]protocol.Reading{"ws/alice": {State: protocol.TurnBlocked, Since: 1767225600000, Runs: 2, Incarnation: "s-1", Reason: "dialog", Pending: "Allow?"}},
			map[string]protocol.Reading{"ws/alice": {State: protocol.TurnUnknown, Incarnation: "s-1"}},
			map[string]protocol.Reading{},
		},
	},
	protocol.MethodChannelBaseline.Name: {
		params:  []any{fullBase},
		results: []any{protocol.Baseline{Runs: 3, Incarnation: "s-1"}, protocol.Baseline{}, nil},
	},
	protocol.MethodChannelReceipt.Name: {
		params: []any{protocol.ReceiptParams{Base: fullBase, MsgID: "m-1"}},
		results: []any{
			protocol.Receipt{State: protocol.ReceiptAccepted, ID: "m-1", Runs: i64(2), At: i64(1767225600000), Incarnation: "s-1"},
			protocol.Receipt{State: protocol.ReceiptAccepted, ID: "m-1"},
			protocol.Receipt{State: protocol.ReceiptNotAccepted, ID: "m-1"},
			protocol.Receipt{State: protocol.ReceiptUnreachable, ID: "m-1", Reason: "pane gone"},
		},
	},
	protocol.MethodChannelLastRun.Name: {
		params:  []any{protocol.LastRunParams{Base: fullBase, AfterRuns: 2, Inc: "s-1"}, protocol.LastRunParams{Base: minBase}},
		results: []any{fullObs, minObs, nil},
	},
	protocol.MethodChannelWatch.Name: {
		params:  []any{protocol.WatchParams{Base: fullBase, AfterRuns: i64(2), Inc: "s-1"}, protocol.WatchParams{Base: minBase}},
		results: []any{protocol.WatchResult{WatchID: "w-1", Initial: fullObs, AfterRuns: i64(2)}, protocol.WatchResult{WatchID: "w-1", Initial: minObs}},
	},
	protocol.MethodChannelSend.Name: {
		params: []any{protocol.SendParams{Base: fullBase, Text: "hi", MsgID: "m-1", Mode: protocol.ModeSteer, Force: true, FirstPrompt: true, ExpectIncarnation: "s-1"},
			protocol.SendParams{Base: minBase, Text: "hi", MsgID: "m-1", Mode: protocol.ModeFollowUp}},
		results: []any{protocol.SendResult{Channel: "claude", Ack: protocol.AckConfirmed, Baseline: i64(2), MsgID: "m-1"},
			protocol.SendResult{Channel: "claude", Ack: protocol.AckUnknown}},
	},
	protocol.MethodChannelFresh.Name: {
		params: []any{protocol.FreshParams{Base: fullBase, Text: "hi", MsgID: "m-1", Force: true, ExpectIncarnation: "s-1"},
			protocol.FreshParams{Base: minBase, Text: "hi", MsgID: "m-1"}},
		results: []any{protocol.SendResult{Channel: "claude", Ack: protocol.AckConfirmed, Baseline: i64(0), MsgID: "m-1"}},
	},
	protocol.MethodChannelCommand.Name: {
		params: []any{protocol.CommandParams{Base: fullBase, Name: "compact", Instructions: "keep tests", Force: true, ExpectIncarnation: "s-1"},
			protocol.CommandParams{Base: minBase, Name: "compact"}},
		results: []any{protocol.SendResult{Channel: "claude", Ack: protocol.AckUnknown}},
	},
	protocol.MethodChannelInterrupt.Name: {
		params: []any{protocol.InterruptParams{Base: fullBase, Text: "stop", MsgID: "m-2", TimeoutMs: 10000, ExpectIncarnation: "s-1"},
			protocol.InterruptParams{Base: minBase, Text: "stop", MsgID: "m-2"}},
		results: []any{protocol.InterruptResult{WasBusy: true, Pending: true, Runs: i64(3), MsgID: "m-2", Incarnation: "s-1"},
			protocol.InterruptResult{}},
	},
	protocol.MethodChannelAbort.Name: {
		params:  []any{protocol.AbortParams{Base: fullBase, TimeoutMs: 10000}},
		results: []any{protocol.AbortResult{Before: protocol.TurnBusy, After: protocol.TurnIdle, Settled: true, Aborted: true, Pending: true}},
	},
	protocol.MethodChannelAnswer.Name: {
		params: []any{protocol.AnswerParams{Base: fullBase, Keys: []string{"Down", "Enter"}, Force: true},
			protocol.AnswerParams{Base: minBase, Keys: []string{}}},
		results: []any{protocol.AnswerResult{Keys: []string{"Enter"}, Ack: protocol.AckConfirmed}, protocol.AnswerResult{Keys: []string{}, Ack: protocol.AckUnknown}},
	},
}

var notificationExamples = map[string][]any{
	protocol.NotifyWatchSettled: {protocol.WatchSettled{WatchID: "w-1", Observation: fullObs},
		protocol.WatchSettled{WatchID: "w-1", Observation: minObs}},
	protocol.NotifyWatchRestarted: {protocol.WatchRestarted{WatchID: "w-1", Incarnation: "s-2"}},
}

// allMethods is every method protocol/methods.go declares.
var allMethods = protocol.MethodNames()
