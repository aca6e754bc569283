package protocol

// Seams is the declaration's seams object: a nil seam is not declared.
type Seams struct {
	Link    *LinkSeam    `json:"link,omitempty"`
	Job     *JobSeam     `json:"job,omitempty"`
	Host    *HostSeam    `json:"host,omitempty"`
	Channel *ChannelSeam `json:"channel,omitempty"`
}

// Link seam values.
const (
	SlotsMu   = "mu"
	SlotsSelf = "self"

	RemoteStopped  = "stopped"
	RemoteStopping = "stopping"
	RemoteUnknown  = "unknown"

	QuiescenceProvable   = "provable"
	QuiescenceUnprovable = "unprovable"
)

// LinkSeam declares the link. Push is optional on the wire: nil omits it.
type LinkSeam struct {
	Fetch           bool     `json:"fetch"`
	Push            *bool    `json:"push,omitempty"`
	Slots           string   `json:"slots"`
	RemoteOnTimeout string   `json:"remoteOnTimeout"`
	Quiescence      string   `json:"quiescence"`
	MaxScriptBytes  int64    `json:"maxScriptBytes"`
	Checks          []string `json:"checks"`
}

// CanPush reports whether link.push is declared.
func (l *LinkSeam) CanPush() bool { return l != nil && l.Push != nil && *l.Push }

// Job seam values.
const (
	ViewBound    = "bound"
	ViewDetached = "detached"

	HandlePane  = "pane"
	HandleFile  = "file"
	HandleReply = "reply"

	FirstTurnOnSend  = "on-send"
	FirstTurnAtStart = "at-start"
)

// Dedupe is a key capability's dedupe: an exact repeat inside WindowMs
// returns the first result and makes no second effect.
type Dedupe struct {
	Exact    bool  `json:"exact"`
	WindowMs int64 `json:"windowMs"`
}

// KeyCaps are an effect's key capabilities (host.acquire, job.start).
type KeyCaps struct {
	Lookup     bool    `json:"lookup"`
	FenceKey   bool    `json:"fenceKey"`
	Dedupe     *Dedupe `json:"dedupe,omitempty"`
	InFlightMs *int64  `json:"inFlightMs,omitempty"`
}

// Honours says which JobSpec fields a job kind carries out. Absent: env
// only, full-access only.
type Honours struct {
	Command bool     `json:"command"`
	Env     bool     `json:"env"`
	Sockets bool     `json:"sockets"`
	Roles   []string `json:"roles"`
}

// JobSeam declares the job.
type JobSeam struct {
	Kind         string   `json:"kind"`
	View         string   `json:"view"`
	Handle       string   `json:"handle"`
	Start        KeyCaps  `json:"start"`
	Channel      string   `json:"channel"`
	Checks       []string `json:"checks"`
	FirstTurn    string   `json:"firstTurn,omitempty"`
	OutlivesHost *bool    `json:"outlivesHost,omitempty"`
	Honours      *Honours `json:"honours,omitempty"`
}

// HostSeam declares the host.
type HostSeam struct {
	Acquire KeyCaps `json:"acquire"`
}

// ChannelSeam declares the channel.
type ChannelSeam struct {
	Name string      `json:"name"`
	Caps ChannelCaps `json:"caps"`
}

// ChannelCaps are a channel's capabilities. The schema's description of each
// gives its values; "none" (or false) means mu never calls that method.
type ChannelCaps struct {
	Fence      string `json:"fence"`      // "none" (the only value mu loads)
	Receipt    string `json:"receipt"`    // "exact" or "none"
	Dedupe     string `json:"dedupe"`     // "exact" or "none"
	Steer      string `json:"steer"`      // "native" or "none"
	Interrupt  string `json:"interrupt"`  // "native" or "none"
	Fresh      string `json:"fresh"`      // "in-place" or "none"
	Answer     bool   `json:"answer"`     // channel.answer is served
	Command    bool   `json:"command"`    // channel.command is served
	Watch      string `json:"watch"`      // "stream" (the only value mu loads)
	SettleText string `json:"settleText"` // "full" or "truncated" ("none" is refused)
}

// Bool returns a pointer to b, for the declaration's optional booleans.
func Bool(b bool) *bool { return &b }

// Int64 returns a pointer to n.
func Int64(n int64) *int64 { return &n }
