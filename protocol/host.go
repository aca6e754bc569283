package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// The host seam's wire types (the spec's "The host").

// AcquireParams is host.acquire's params: the effect's key (the host
// record's token) and Params, the `--param` map mu passes through as is.
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
