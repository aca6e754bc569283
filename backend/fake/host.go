package fake

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// ownerAlive tells whether the process making a pending effect still runs.
func ownerAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// acquireFacts turns --param's ttl, idle and maxJobs into the acquire
// result's facts; boot is how long the acquire takes.
func acquireFacts(params map[string]string, now int64) (res protocol.AcquireResult, boot time.Duration, err error) {
	for k, v := range params {
		switch k {
		case "ttl", "idle", "boot":
			d, perr := time.ParseDuration(v)
			if perr != nil || d < 0 {
				return res, 0, protocol.Errorf(protocol.Permanent, "param %s=%q: want a duration such as 90m", k, v)
			}
			switch k {
			case "ttl":
				res.DeadlineAt = protocol.Int64(now + d.Milliseconds())
			case "idle":
				res.IdleReclaimMs = protocol.Int64(d.Milliseconds())
			default:
				boot = d
			}
		case "maxJobs":
			n, perr := strconv.Atoi(v)
			if perr != nil || n < 0 {
				return res, 0, protocol.Errorf(protocol.Permanent, "param maxJobs=%q: want a whole number", v)
			}
			res.MaxJobs = &n
		default:
			return res, 0, protocol.Errorf(protocol.Permanent, "unknown param %q (the fake takes ttl, idle, maxJobs and boot)", k)
		}
	}
	return res, boot, nil
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (f *Fake) hostAcquire(ctx context.Context, call *protocol.Call, p protocol.AcquireParams) (protocol.AcquireResult, error) {
	if p.Key == "" {
		return protocol.AcquireResult{}, protocol.Errorf(protocol.Permanent, "host.acquire: key is required")
	}
	hash, err := paramsHash(call.Params)
	if err != nil {
		return protocol.AcquireResult{}, protocol.Wrap(protocol.Permanent, err, "host.acquire")
	}
	now := f.now()
	facts, boot, err := acquireFacts(p.Params, now)
	if err != nil {
		return protocol.AcquireResult{}, err
	}
	if boot == 0 {
		boot = time.Duration(f.cfg.EffectMs) * time.Millisecond
	}
	var done *protocol.AcquireResult
	err = f.do(ctx, true, func(w *World) error {
		if w.Fenced["host:"+p.Key] {
			return protocol.Errorf(protocol.Permanent, "host key %s was fenced by a lookup that found none", p.Key)
		}
		if h := w.Hosts[p.Key]; h != nil {
			if h.Hash != hash {
				return protocol.Errorf(protocol.Permanent, "host key %s was acquired with other params", p.Key)
			}
			if h.State != statePending {
				r := h.Result
				done = &r
				return nil
			}
			if ownerAlive(h.Owner) && h.Owner != os.Getpid() {
				return protocol.Errorf(protocol.Retryable, "host key %s is being acquired by another invocation", p.Key)
			}
			h.Owner = os.Getpid()
			return nil
		}
		facts.Handle = "host-" + strconv.FormatInt(w.next(), 10)
		w.Hosts[p.Key] = &Host{Key: p.Key, Hash: hash, State: statePending, Owner: os.Getpid(), Result: facts}
		return nil
	})
	if err != nil {
		return protocol.AcquireResult{}, err
	}
	if done != nil {
		return *done, nil
	}
	if err := sleepCtx(ctx, boot); err != nil {
		_ = f.do(context.Background(), true, func(w *World) error {
			if h := w.Hosts[p.Key]; h != nil && h.State == statePending && h.Owner == os.Getpid() {
				delete(w.Hosts, p.Key)
			}
			return nil
		})
		return protocol.AcquireResult{}, err
	}
	var out protocol.AcquireResult
	err = f.do(ctx, true, func(w *World) error {
		h := w.Hosts[p.Key]
		if h == nil {
			return protocol.Errorf(protocol.UnknownOutcome, "host key %s vanished while being acquired", p.Key)
		}
		if h.State == statePending {
			h.State, h.Owner, h.At = stateUp, 0, f.now()
		}
		out = h.Result
		return os.MkdirAll(filepath.Join(f.root, "hosts", h.Result.Handle), 0o700)
	})
	return out, err
}

func (f *Fake) hostLookup(ctx context.Context, call *protocol.Call, p protocol.LookupParams) (protocol.HostLookupResult, error) {
	var out protocol.HostLookupResult
	err := f.do(ctx, true, func(w *World) error {
		h := w.Hosts[p.Key]
		if h != nil && h.State == statePending && !ownerAlive(h.Owner) {
			delete(w.Hosts, p.Key) // its acquirer died before the effect landed
			h = nil
		}
		switch {
		case h == nil:
			out.None = true
			if p.Fence {
				w.Fenced["host:"+p.Key] = true
			}
		case h.State == statePending:
			out.Pending = true
		default:
			r := h.Result
			out.Found = &r
		}
		return nil
	})
	return out, err
}

func (f *Fake) hostStatus(ctx context.Context, call *protocol.Call, p protocol.Base) (protocol.HostStatus, error) {
	handle := p.Target.Host.Handle
	if handle == "" {
		return protocol.HostStatus{}, protocol.Errorf(protocol.Permanent, "host.status: target.host.handle is required")
	}
	var out protocol.HostStatus
	err := f.do(ctx, false, func(w *World) error {
		h := w.hostByHandle(handle)
		switch {
		case h == nil:
			out = protocol.HostStatus{State: protocol.HostGone, Reason: "no host " + handle + " in this fake's world (without --state a world lasts one invocation)"}
		case h.State == stateReleased:
			out = protocol.HostStatus{State: protocol.HostGone, Reason: "released"}
		case h.State == stateGone:
			out = protocol.HostStatus{State: protocol.HostGone, Reason: "its ttl ran out: its directory and its jobs are gone"}
		case h.State == statePending:
			out = protocol.HostStatus{State: protocol.HostUnknown, Reason: "still being acquired"}
		default:
			// Every fact, as a patch: a fact the host does not have is sent
			// as null, which clears it.
			out = protocol.HostStatus{State: protocol.HostUp, Handle: handle, Facts: map[string]json.RawMessage{
				"deadlineAt":    rawOrNull(h.Result.DeadlineAt),
				"idleReclaimMs": rawOrNull(h.Result.IdleReclaimMs),
				"maxJobs":       rawOrNull(h.Result.MaxJobs),
			}}
		}
		return nil
	})
	return out, err
}

func rawOrNull[T any](v *T) json.RawMessage {
	if v == nil {
		return json.RawMessage("null")
	}
	b, _ := json.Marshal(*v)
	return b
}

func (f *Fake) hostRelease(ctx context.Context, call *protocol.Call, p protocol.KeyParams) (protocol.Null, error) {
	var handle string
	err := f.do(ctx, true, func(w *World) error {
		h := w.Hosts[p.Key]
		if h == nil || h.State == stateReleased {
			return nil // already released, or never acquired: resolves
		}
		if h.State == statePending && ownerAlive(h.Owner) {
			return protocol.Errorf(protocol.Retryable, "host key %s is still being acquired", p.Key)
		}
		if h.State == stateGone {
			return nil // its ttl ran out: it is gone already, and so are its jobs
		}
		h.State, h.Released = stateReleased, f.now()
		handle = h.Result.Handle
		f.endHostJobs(w, h, "its host was released", false, true)
		return nil
	})
	if err == nil && handle != "" {
		f.removeHost(handle) // gone is a proof: its runs end before the answer
	}
	return protocol.Null{}, err
}
