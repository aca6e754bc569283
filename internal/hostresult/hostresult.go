// Package hostresult is a provider's host.acquire result as it keeps it on
// the host it created (a container's label, a pod's annotation), so that a
// repeated acquire and a lookup answer the first result, and host.status
// sends the same facts; and the digest of an acquire's params, so that a
// second acquire of a key with other params is refused. Shared by the
// docker and k8s providers.
package hostresult

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// Stored is the acquire result without its handle (known only once the
// host exists).
type Stored struct {
	DeadlineAt    *int64 `json:"deadlineAt,omitempty"`
	IdleReclaimMs *int64 `json:"idleReclaimMs,omitempty"`
	MaxJobs       *int   `json:"maxJobs,omitempty"`
}

// New is the result of an acquire at now: ttl, idle and maxJobs each 0
// when unset.
func New(now time.Time, ttl, idle time.Duration, maxJobs int) Stored {
	var r Stored
	if ttl > 0 {
		r.DeadlineAt = protocol.Int64(now.Add(ttl).UnixMilli())
	}
	if idle > 0 {
		r.IdleReclaimMs = protocol.Int64(idle.Milliseconds())
	}
	if maxJobs > 0 {
		n := maxJobs
		r.MaxJobs = &n
	}
	return r
}

// String is the stored form (JSON).
func (r Stored) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Parse reads the stored form.
func Parse(s string) (Stored, error) {
	var r Stored
	err := json.Unmarshal([]byte(s), &r)
	return r, err
}

// ParseAt reads the stored form kept at where (a label, an annotation),
// its error naming where.
func ParseAt(where, s string) (Stored, error) {
	r, err := Parse(s)
	if err != nil {
		return r, fmt.Errorf("%s: %w", where, err)
	}
	return r, nil
}

// Terms are the acquire params every provider takes whose values the
// result carries: ttl, idle and maxJobs (each 0 when unset).
type Terms struct {
	TTL     time.Duration // 0: no deadline
	Idle    time.Duration // 0: no idle reclaim
	MaxJobs int           // 0: no cap
}

// Set reads param k=v into t when k is one of the terms (ok); why is what
// is wrong with a bad value. A ttl or idle under least is bad.
func (t *Terms) Set(k, v string, least time.Duration) (ok bool, why string) {
	switch k {
	case "ttl", "idle":
		d, err := time.ParseDuration(v)
		if err != nil || d < least {
			return true, "want a positive duration such as 90m or 2h"
		}
		if k == "ttl" {
			t.TTL = d
		} else {
			t.Idle = d
		}
	case "maxJobs":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return true, "want a positive integer"
		}
		t.MaxJobs = n
	default:
		return false, ""
	}
	return true, ""
}

// Result is the result of an acquire at now on these terms.
func (t Terms) Result(now time.Time) Stored { return New(now, t.TTL, t.Idle, t.MaxJobs) }

// With is the acquire result for the host handle.
func (r Stored) With(handle string) *protocol.AcquireResult {
	return &protocol.AcquireResult{Handle: handle, DeadlineAt: r.DeadlineAt, IdleReclaimMs: r.IdleReclaimMs, MaxJobs: r.MaxJobs}
}

// Facts is an up status's patch: every fact the acquire set, and null for
// those it did not (so a cleared fact stays cleared).
func (r Stored) Facts() map[string]json.RawMessage {
	f := map[string]json.RawMessage{}
	put := func(k string, v any, ok bool) {
		if !ok {
			f[k] = json.RawMessage("null")
			return
		}
		b, _ := json.Marshal(v)
		f[k] = b
	}
	put("deadlineAt", r.DeadlineAt, r.DeadlineAt != nil)
	put("idleReclaimMs", r.IdleReclaimMs, r.IdleReclaimMs != nil)
	put("maxJobs", r.MaxJobs, r.MaxJobs != nil)
	return f
}

// Digest identifies an acquire's params.
func Digest(p map[string]string) string {
	b, _ := json.Marshal(p) // map keys marshal sorted
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
