package protocol

import (
	"encoding/json"
	"time"
)

// DefaultRunTimeout is a run's timeout when its timeoutMs is 0: the spec's
// default, 20 s.
const DefaultRunTimeout = 20 * time.Second

// MaxTimeoutMs is the largest timeoutMs a call may carry: 365 days. Serve
// refuses a larger one (permanent, naming the field) before any handler
// runs; a duration that large still fits a time.Duration with room for a
// grace, which the wire's integer does not.
const MaxTimeoutMs = 365 * 24 * 60 * 60 * 1000

// RunTimeout is the one reading of a call's timeoutMs: 0 is the spec's
// default (DefaultRunTimeout); anything else is that many milliseconds,
// never more than MaxTimeoutMs (Serve has already refused a larger one or a
// negative one; this bound only keeps the arithmetic safe).
func RunTimeout(ms int64) time.Duration {
	switch {
	case ms <= 0:
		return DefaultRunTimeout
	case ms > MaxTimeoutMs:
		ms = MaxTimeoutMs
	}
	return time.Duration(ms) * time.Millisecond
}

// readBase reads what every call's params carry, before its handler runs:
// the deadline and the target, which the schema requires of every method
// but initialize, shutdown and $/cancel, and a timeoutMs when present. A
// missing or malformed one is a permanent error naming the field. The rest
// of the params are the handler's to decode (Call.Decode, strictly).
func readBase(method string, params json.RawMessage) (Base, error) {
	if len(params) == 0 || string(params) == "null" {
		return Base{}, Errorf(Permanent, "%s: params are required (deadline and target)", method)
	}
	// One decode: the pointers tell a missing field from a zero one.
	var seen struct {
		Deadline  *int64 `json:"deadline"`
		TimeoutMs *int64 `json:"timeoutMs"`
		// Target's own fields, its host as a pointer (the shallower
		// field wins): a field Target gains is read here too.
		Target *struct {
			Target
			Host *HostRef `json:"host"`
		} `json:"target"`
	}
	if err := json.Unmarshal(params, &seen); err != nil {
		return Base{}, Errorf(Permanent, "%s: invalid params: %v", method, err)
	}
	switch {
	case seen.Deadline == nil:
		return Base{}, Errorf(Permanent, "%s: params lack deadline (epoch ms), which every call carries", method)
	case *seen.Deadline < 0:
		return Base{}, Errorf(Permanent, "%s: deadline %d is negative", method, *seen.Deadline)
	case seen.Target == nil:
		return Base{}, Errorf(Permanent, "%s: params lack target, which every call carries", method)
	case seen.Target.Host == nil:
		return Base{}, Errorf(Permanent, "%s: target lacks host", method)
	case seen.TimeoutMs != nil && *seen.TimeoutMs < 0:
		return Base{}, Errorf(Permanent, "%s: timeoutMs %d is negative", method, *seen.TimeoutMs)
	case seen.TimeoutMs != nil && *seen.TimeoutMs > MaxTimeoutMs:
		return Base{}, Errorf(Permanent, "%s: timeoutMs %d exceeds the maximum, %d (365 days)", method, *seen.TimeoutMs, int64(MaxTimeoutMs))
	}
	t := seen.Target.Target
	t.Host = *seen.Target.Host
	return Base{Deadline: *seen.Deadline, Target: t}, nil
}
