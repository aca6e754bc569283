package protocol

// What every call's params carry: its deadline and its target.

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
