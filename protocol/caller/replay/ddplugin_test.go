package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/programs"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// "dd" is this test binary run as a protocol.Serve plugin, for the
// declarations the fake does not make. MU_REPLAY_DD picks one:
//
//   - "dedupe": host.acquire and job.start with exact dedupe and no
//     lookup; a channel with receipt none and exact dedupe.
//   - "unfenced": host.acquire with an unfenced lookup and inFlightMs; a
//     handle "file" job kind with a fenced lookup.
//
// Its world is a JSON file (MU_REPLAY_DD_STATE) counting every effect that
// landed. MU_REPLAY_DD_CRASH=before|after makes its first effect exit (3)
// before it lands or after it landed.
const (
	envDD      = "MU_REPLAY_DD"
	envDDState = "MU_REPLAY_DD_STATE"
	envDDCrash = "MU_REPLAY_DD_CRASH"
)

type ddWorld struct {
	Hosts      map[string]string `json:"hosts"`      // key → handle
	Jobs       map[string]string `json:"jobs"`       // key → handle
	Deliveries map[string]int    `json:"deliveries"` // msgId → times landed
	Effects    int               `json:"effects"`
	Fenced     map[string]bool   `json:"fenced"`
}

func ddSeams(mode string) protocol.Seams {
	dedupe := protocol.KeyCaps{Dedupe: &protocol.Dedupe{Exact: true, WindowMs: 600000}}
	s := protocol.Seams{
		Link: &protocol.LinkSeam{Fetch: true, Slots: protocol.SlotsSelf, RemoteOnTimeout: protocol.RemoteStopped,
			Quiescence: protocol.QuiescenceProvable, MaxScriptBytes: 65536, Checks: []string{}},
		Job: &protocol.JobSeam{Kind: "dd", View: protocol.ViewBound, Handle: protocol.HandleReply, Start: dedupe,
			Channel: "ddchan", Checks: []string{}},
		Host: &protocol.HostSeam{Acquire: dedupe},
		Channel: &protocol.ChannelSeam{Name: "ddchan", Caps: protocol.ChannelCaps{Fence: "none", Receipt: "none",
			Dedupe: "exact", Steer: "none", Interrupt: "none", Fresh: "none", Watch: "stream", SettleText: "full"}},
	}
	if mode == "unfenced" {
		s.Host.Acquire = protocol.KeyCaps{Lookup: true, InFlightMs: protocol.Int64(1000)}
		s.Job.Handle = protocol.HandleFile
		s.Job.Start = protocol.KeyCaps{Lookup: true, FenceKey: true}
	}
	return s
}

func runDD() int {
	mode, path := os.Getenv(envDD), os.Getenv(envDDState)
	var mu sync.Mutex
	crashed := false
	// effect runs fn on the world under the scenario's crash.
	effect := func(fn func(w *ddWorld) (any, error)) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		crash := ""
		if !crashed {
			crash, crashed = os.Getenv(envDDCrash), true
		}
		if crash == "before" {
			os.Exit(3)
		}
		w := ddWorld{Hosts: map[string]string{}, Jobs: map[string]string{}, Deliveries: map[string]int{}, Fenced: map[string]bool{}}
		if b, err := os.ReadFile(path); err == nil {
			if err := json.Unmarshal(b, &w); err != nil {
				return nil, err
			}
		}
		v, err := fn(&w)
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(w)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, err
		}
		if crash == "after" {
			os.Exit(3)
		}
		return v, nil
	}
	view := protocol.View{Command: "true", Env: map[string]string{}}
	h := map[string]protocol.Handler{
		protocol.MethodHostAcquire.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			var p protocol.AcquireParams
			if err := call.Decode(&p); err != nil {
				return nil, err
			}
			return effect(func(w *ddWorld) (any, error) {
				if w.Fenced["host:"+p.Key] {
					return nil, protocol.Errorf(protocol.Permanent, "fenced")
				}
				if _, ok := w.Hosts[p.Key]; !ok {
					w.Effects++
					w.Hosts[p.Key] = fmt.Sprintf("host-%d", w.Effects)
				}
				return protocol.AcquireResult{Handle: w.Hosts[p.Key]}, nil
			})
		},
		protocol.MethodHostLookup.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			var p protocol.LookupParams
			if err := call.Decode(&p); err != nil {
				return nil, err
			}
			return ddLookup(path, "host:"+p.Key, p.Fence, func(w *ddWorld) (any, bool) {
				h, ok := w.Hosts[p.Key]
				return protocol.HostLookupResult{Found: &protocol.AcquireResult{Handle: h}}, ok
			}, protocol.HostLookupResult{None: true})
		},
		protocol.MethodJobStart.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			var p protocol.JobStartParams
			if err := call.Decode(&p); err != nil {
				return nil, err
			}
			return effect(func(w *ddWorld) (any, error) {
				if w.Fenced["job:"+p.Key] {
					return nil, protocol.Errorf(protocol.Permanent, "fenced")
				}
				if _, ok := w.Jobs[p.Key]; !ok {
					w.Effects++
					w.Jobs[p.Key] = fmt.Sprintf("job-%d", w.Effects)
				}
				return protocol.JobStartResult{View: view, Handle: w.Jobs[p.Key]}, nil
			})
		},
		protocol.MethodJobLookup.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			var p protocol.LookupParams
			if err := call.Decode(&p); err != nil {
				return nil, err
			}
			return ddLookup(path, "job:"+p.Key, p.Fence, func(w *ddWorld) (any, bool) {
				h, ok := w.Jobs[p.Key]
				return protocol.JobLookupResult{Found: &protocol.JobFound{Handle: h}}, ok
			}, protocol.JobLookupResult{None: true})
		},
		protocol.MethodChannelSend.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
			var p protocol.SendParams
			if err := call.Decode(&p); err != nil {
				return nil, err
			}
			return effect(func(w *ddWorld) (any, error) {
				if w.Deliveries[p.MsgID] == 0 {
					w.Effects++
					w.Deliveries[p.MsgID]++
				}
				return protocol.SendResult{Channel: "ddchan", Ack: protocol.AckConfirmed, MsgID: p.MsgID}, nil
			})
		},
	}
	err := protocol.Serve(context.Background(), protocol.Options{Name: "dd", Version: "0.1.0", Instance: "dd", Seams: ddSeams(mode), Handlers: h})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// ddLookup answers a lookup from the world file; a fenced none is final.
func ddLookup(path, fenceKey string, fence bool, found func(w *ddWorld) (any, bool), none any) (any, error) {
	w := ddWorld{Hosts: map[string]string{}, Jobs: map[string]string{}, Deliveries: map[string]int{}, Fenced: map[string]bool{}}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
	}
	if v, ok := found(&w); ok {
		return v, nil
	}
	if fence {
		w.Fenced[fenceKey] = true
		b, _ := json.Marshal(w)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, err
		}
	}
	return none, nil
}

// dd starts the dd plugin: this test binary as mu-plugin-dd.
func dd(t *testing.T, mode, state, crash string) *drive.Plugin {
	t.Helper()
	env := []string{envDD + "=" + mode, envDDState + "=" + state, "GORACE=atexit_sleep_ms=0"}
	if crash != "" {
		env = append(env, envDDCrash+"="+crash)
	}
	return startCfg(t, caller.Config{Name: "dd", Argv: []string{programs.Command(t, "mu-plugin-dd")}, Env: env})
}

// ddCrashed runs an effect through the dd plugin in mode that dies when
// ("before" or "after" the effect), then starts the next invocation's dd
// plugin on the same state: the intent left unknown, and that plugin.
func ddCrashed(t *testing.T, j *Journal, state, mode, when, method string, params any) (*Intent, *drive.Plugin) {
	t.Helper()
	in := crashed(t, j, dd(t, mode, state, when), method, params)
	return in, dd(t, mode, state, "")
}

func ddRead(t *testing.T, state string) ddWorld {
	t.Helper()
	var w ddWorld
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	return w
}
