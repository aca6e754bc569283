package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/mu-org/mu-plugins/protocol"
)

// knownParams are host.acquire's --param names.
var knownParams = []string{"cpus", "idle", "image", "maxJobs", "memory", "ttl"}

// acquireSpec is host.acquire's params, parsed.
type acquireSpec struct {
	Image    string
	TTL      time.Duration // 0: no deadline
	Idle     time.Duration // 0: no idle reclaim
	MaxJobs  int           // 0: no cap
	NanoCPUs int64
	Memory   int64
}

// parseParams reads the --param map. An unknown or malformed param is a
// permanent error naming the known ones.
func parseParams(p map[string]string, defImage string) (acquireSpec, error) {
	s := acquireSpec{Image: defImage}
	bad := func(k, why string) error {
		return protocol.Errorf(protocol.Permanent, "param %s=%q: %s (known params: %s)", k, p[k], why, strings.Join(knownParams, ", "))
	}
	for _, k := range sortedKeys(p) {
		v := p[k]
		switch k {
		case "image":
			if v == "" {
				return s, bad(k, "an image name is required")
			}
			s.Image = v
		case "ttl", "idle":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return s, bad(k, "want a positive duration such as 90m or 2h")
			}
			if k == "ttl" {
				s.TTL = d
			} else {
				s.Idle = d
			}
		case "maxJobs":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return s, bad(k, "want a positive integer")
			}
			s.MaxJobs = n
		case "cpus":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 || f > 1024 || math.IsNaN(f) {
				return s, bad(k, "want a positive number of CPUs such as 1.5")
			}
			s.NanoCPUs = int64(f * 1e9)
		case "memory":
			n, err := units.RAMInBytes(v)
			if err != nil || n < 6*1024*1024 {
				return s, bad(k, "want a size of at least 6m such as 512m or 2g")
			}
			s.Memory = n
		default:
			return s, protocol.Errorf(protocol.Permanent, "unknown param %q (known params: %s)", k, strings.Join(knownParams, ", "))
		}
	}
	return s, nil
}

// paramsDigest identifies an acquire's params: a second acquire of a key with
// other params is refused, not answered with the first container.
func paramsDigest(p map[string]string) string {
	b, _ := json.Marshal(p) // map keys marshal sorted
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// storedResult is the acquire result kept in the container's LabelResult,
// without the handle (the container's ID, known only after create).
type storedResult struct {
	DeadlineAt    *int64 `json:"deadlineAt,omitempty"`
	IdleReclaimMs *int64 `json:"idleReclaimMs,omitempty"`
	MaxJobs       *int   `json:"maxJobs,omitempty"`
}

func (s acquireSpec) result(now time.Time) storedResult {
	var r storedResult
	if s.TTL > 0 {
		r.DeadlineAt = protocol.Int64(now.Add(s.TTL).UnixMilli())
	}
	if s.Idle > 0 {
		r.IdleReclaimMs = protocol.Int64(s.Idle.Milliseconds())
	}
	if s.MaxJobs > 0 {
		n := s.MaxJobs
		r.MaxJobs = &n
	}
	return r
}

func (r storedResult) label() string {
	b, _ := json.Marshal(r)
	return string(b)
}

func parseResult(label string) (storedResult, error) {
	var r storedResult
	if err := json.Unmarshal([]byte(label), &r); err != nil {
		return r, fmt.Errorf("label %s: %w", LabelResult, err)
	}
	return r, nil
}

func (r storedResult) with(handle string) *protocol.AcquireResult {
	return &protocol.AcquireResult{Handle: handle, DeadlineAt: r.DeadlineAt, IdleReclaimMs: r.IdleReclaimMs, MaxJobs: r.MaxJobs}
}
