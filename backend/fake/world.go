package fake

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mu-org/mu-plugins/protocol"
)

// World is everything the fake remembers: hosts, jobs and agents. It is
// plain data, saved whole as JSON after every change (see Store).
type World struct {
	Seq    int64             `json:"seq"`    // the last number handed out (handles, incarnations)
	Hosts  map[string]*Host  `json:"hosts"`  // by acquire key
	Jobs   map[string]*Job   `json:"jobs"`   // by start key
	Agents map[string]*Agent `json:"agents"` // by "<workstream>/<name>"
	Fenced map[string]bool   `json:"fenced"` // "host:<key>", "job:<key>": a fenced lookup proved none
}

// Effect states of a host or job record.
const (
	statePending  = "pending"  // the effect is being made by Owner
	stateUp       = "up"       // a host that stands
	stateReleased = "released" // a released host
	stateGone     = "gone"     // a host whose ttl ran out
	stateRunning  = "running"  // a started job
	stateEnded    = "ended"    // a stopped job
)

// Host is one acquired host.
type Host struct {
	Key      string                 `json:"key"`
	Hash     string                 `json:"hash"` // of the acquire params, deadline left out
	State    string                 `json:"state"`
	Owner    int                    `json:"owner,omitempty"` // pid making a pending acquire
	At       int64                  `json:"at"`              // when the effect landed (ms)
	Result   protocol.AcquireResult `json:"result"`
	Released int64                  `json:"released,omitempty"`
}

// Job is one started job and the agent it runs.
type Job struct {
	Key        string                  `json:"key"`
	Hash       string                  `json:"hash"`
	State      string                  `json:"state"`
	Owner      int                     `json:"owner,omitempty"`
	At         int64                   `json:"at"`
	Spec       protocol.JobSpec        `json:"spec"`
	Host       string                  `json:"host"` // the host's directory name
	Result     protocol.JobStartResult `json:"result"`
	Agent      string                  `json:"agent"` // "<workstream>/<name>"
	Transcript string                  `json:"transcript"`
	Exit       *int                    `json:"exit,omitempty"`
	Lost       string                  `json:"lost,omitempty"` // why an ended job is lost (its host is gone)
}

func newWorld() *World {
	return &World{Hosts: map[string]*Host{}, Jobs: map[string]*Job{}, Agents: map[string]*Agent{}, Fenced: map[string]bool{}}
}

func (w *World) fill() {
	if w.Hosts == nil {
		w.Hosts = map[string]*Host{}
	}
	if w.Jobs == nil {
		w.Jobs = map[string]*Job{}
	}
	if w.Agents == nil {
		w.Agents = map[string]*Agent{}
	}
	if w.Fenced == nil {
		w.Fenced = map[string]bool{}
	}
	for _, a := range w.Agents {
		if a.Deliveries == nil {
			a.Deliveries = map[string]*Delivery{}
		}
	}
}

// next hands out the world's next number.
func (w *World) next() int64 { w.Seq++; return w.Seq }

// hadInc reports whether inc is an incarnation this world issued
// ("inc-<n>", n already drawn from next).
func (w *World) hadInc(inc string) bool {
	n, err := strconv.ParseInt(strings.TrimPrefix(inc, "inc-"), 10, 64)
	return strings.HasPrefix(inc, "inc-") && err == nil && n >= 1 && n <= w.Seq
}

// hostByHandle finds a host record by its handle.
func (w *World) hostByHandle(handle string) *Host {
	for _, h := range w.Hosts {
		if h.Result.Handle == handle {
			return h
		}
	}
	return nil
}

// jobFor finds the job a target names: by key, else by handle.
func (w *World) jobFor(ref *protocol.JobRef) *Job {
	if ref == nil {
		return nil
	}
	if j := w.Jobs[ref.Key]; j != nil {
		return j
	}
	for _, j := range w.Jobs {
		if ref.Handle != "" && j.Result.Handle == ref.Handle {
			return j
		}
	}
	return nil
}

// paramsHash is the sha256 of a call's exact params minus `deadline`, the one
// field mu changes on a resend. Keys are sorted by the re-encoding.
func paramsHash(raw json.RawMessage) (string, error) {
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return "", fmt.Errorf("params: %w", err)
	}
	delete(m, "deadline")
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
