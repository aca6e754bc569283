package protocol

// The channel seam's wire types (the spec's "The channel").

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

// ReadStatesParams is channel.readStates's params: the agents asked (mu
// asks one per call).
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

// ReceiptParams is channel.receipt's params: the msgId of the delivery
// asked about.
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

// Receipt is channel.receipt's result: State (a Receipt* state) of
// delivery ID, which echoes the asked msgId; an accepted one may say the
// Runs it counts from, when (At, epoch ms) and in which Incarnation; an
// unreachable one says why (Reason).
type Receipt struct {
	State       string `json:"state"`
	ID          string `json:"id"`
	Runs        *int64 `json:"runs,omitempty"`
	At          *int64 `json:"at,omitempty"`
	Incarnation string `json:"incarnation,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

// LastRunParams is channel.lastRun's params: the turn settled past
// AfterRuns, in incarnation Inc ("": the current one).
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

// WatchParams is channel.watch's params: wait for a turn settled past
// AfterRuns (nil: the runs now) in incarnation Inc ("": the current one).
type WatchParams struct {
	Base
	AfterRuns *int64 `json:"afterRuns,omitempty"`
	Inc       string `json:"inc,omitempty"`
}

// WatchResult is channel.watch's reply: the watch's id, the Initial
// observation, and the AfterRuns it counts from. Exactly one notification
// follows (WatchSettled or WatchRestarted).
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

// SendParams is channel.send's params: Text delivered as MsgID in Mode
// (ModeFollowUp or ModeSteer). Force delivers even to a turn blocked on a
// dialog; FirstPrompt is never true for an at-start kind; a set
// ExpectIncarnation refuses a channel that restarted since.
type SendParams struct {
	Base
	Text              string `json:"text"`
	MsgID             string `json:"msgId"`
	Mode              string `json:"mode"`
	Force             bool   `json:"force"`
	FirstPrompt       bool   `json:"firstPrompt"`
	ExpectIncarnation string `json:"expectIncarnation,omitempty"`
}

// FreshParams is channel.fresh's params: Text delivered as MsgID in a
// fresh session, in place; Force and ExpectIncarnation as for send.
type FreshParams struct {
	Base
	Text              string `json:"text"`
	MsgID             string `json:"msgId"`
	Force             bool   `json:"force"`
	ExpectIncarnation string `json:"expectIncarnation,omitempty"`
}

// CommandParams is channel.command's params: the harness command Name,
// with Instructions; Force and ExpectIncarnation as for send.
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

// InterruptParams is channel.interrupt's params: interrupt the turn within
// TimeoutMs, then deliver Text (when given) as MsgID; ExpectIncarnation as
// for send.
type InterruptParams struct {
	Base
	Text              string `json:"text"`
	MsgID             string `json:"msgId"`
	TimeoutMs         int64  `json:"timeoutMs"`
	ExpectIncarnation string `json:"expectIncarnation,omitempty"`
}

// InterruptResult is channel.interrupt's result: whether a turn was busy,
// whether a delivery is still pending, the Runs the delivery counts from,
// its MsgID and the channel's Incarnation.
type InterruptResult struct {
	WasBusy     bool   `json:"wasBusy"`
	Pending     bool   `json:"pending"`
	Runs        *int64 `json:"runs,omitempty"`
	MsgID       string `json:"msgId,omitempty"`
	Incarnation string `json:"incarnation,omitempty"`
}

// AbortParams is channel.abort's params: abort the turn within TimeoutMs.
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

// AnswerParams is channel.answer's params: the Keys that answer the
// pending dialog; Force answers even when none is known to be pending.
type AnswerParams struct {
	Base
	Keys  []string `json:"keys"`
	Force bool     `json:"force"`
}

// AnswerResult is channel.answer's result: the Keys sent, and the Ack
// (AckConfirmed or AckUnknown).
type AnswerResult struct {
	Keys []string `json:"keys"`
	Ack  string   `json:"ack"`
}
