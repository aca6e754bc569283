package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/creator"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
)

// TestJobAnswersOnAHostNotRunning: the job calls' answers from a host's
// state alone, as docker's and k8s's job tests see them on real hosts.
func TestJobAnswersOnAHostNotRunning(t *testing.T) {
	want := map[string]map[State]string{
		protocol.MethodJobStatus.Name: {Stopped: `{"state":"lost","reason":"why"}`, Gone: `{"state":"lost","reason":"why"}`, Unclear: `{"state":"unknown","reason":"why"}`},
		protocol.MethodJobStop.Name:   {Stopped: `null`, Gone: `null`, Unclear: `retryable`},
		protocol.MethodJobLookup.Name: {Stopped: `{"unknown":"why"}`, Gone: `{"none":true}`, Unclear: `{"unknown":"why"}`},
		protocol.MethodJobStart.Name:  {Stopped: `permanent`, Gone: `permanent`, Unclear: `retryable`},
	}
	for method, byState := range want {
		for st, w := range byState {
			res, err := notRunning[method](st, "why")
			got := words.JSON(res)
			var pe *protocol.Error
			if errors.As(err, &pe) {
				got = string(pe.Kind)
			}
			if got != w {
				t.Errorf("%s on a host in state %d: %s, want %s", method, st, got, w)
			}
		}
	}
	if len(notRunning) != len(want) {
		t.Errorf("%d guarded methods, want %d", len(notRunning), len(want))
	}
}

// TestGateAnswersReadsUnknown: before the provider is reached, a read
// answers unknown with the reach error's message, any other call fails
// with it, a person's error passes as it is, and nothing is served.
func TestGateAnswersReadsUnknown(t *testing.T) {
	served := false
	next := func(context.Context, *protocol.Call) (any, error) { served = true; return "served", nil }
	down := gate{name: "the Engine", reach: func(context.Context) error {
		return protocol.Errorf(protocol.Retryable, "the Engine is down")
	}}
	res, err := gated(down, protocol.MethodHostStatus.Name, next)(context.Background(), &protocol.Call{})
	if st, ok := res.(protocol.HostStatus); err != nil || !ok || st.State != protocol.HostUnknown || st.Reason != "the Engine is down" {
		t.Errorf("host.status with the provider down: %+v %v", res, err)
	}
	if _, err := gated(down, protocol.MethodHostAcquire.Name, next)(context.Background(), &protocol.Call{}); err == nil {
		t.Errorf("host.acquire with the provider down succeeded")
	}
	human := gate{reach: func(context.Context) error { return protocol.HumanError("fix it", "a bad key") }}
	var pe *protocol.Error
	if _, err := gated(human, protocol.MethodHostLookup.Name, next)(context.Background(), &protocol.Call{}); !errors.As(err, &pe) || pe.Kind != protocol.Human {
		t.Errorf("a person's reach error on a read: %v, want it as it is", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := gated(down, protocol.MethodHostLookup.Name, next)(ctx, &protocol.Call{}); !errors.As(err, &pe) || pe.Kind != protocol.Retryable {
		t.Errorf("a cancelled call: %v, want retryable", err)
	}
	if served {
		t.Errorf("a call was served before the provider was reached")
	}
	up := gate{reach: func(context.Context) error { return nil }}
	if res, _ := gated(up, protocol.MethodHostLookup.Name, next)(context.Background(), &protocol.Call{}); res != "served" {
		t.Errorf("with the provider up: %v", res)
	}
}

// TestAbandonedOnlyWhenNoAcquireRuns: this process's own create is
// abandoned only while no acquire of its key runs here; another's whose
// liveness cannot be told, only once tooOld says so.
func TestAbandonedOnlyWhenNoAcquireRuns(t *testing.T) {
	h := NewHosts(stub{}, "i", "/bin/true", 1, creator.This())
	me := h.Me().String()
	old := func() bool { return true }
	h.InFlight("k", 1)
	if h.Abandoned(me, "k", old) {
		t.Errorf("abandoned while its acquire runs")
	}
	h.InFlight("k", -1)
	if !h.Abandoned(me, "k", func() bool { return false }) {
		t.Errorf("not abandoned once its acquire ended")
	}
	if h.Abandoned("", "k", func() bool { return false }) || !h.Abandoned("", "k", old) {
		t.Errorf("an unknown creator is abandoned only when too old")
	}
}

// TestCheckInstance: a call recorded under another instance is refused;
// none or this one passes.
func TestCheckInstance(t *testing.T) {
	h := NewHosts(stub{}, "mine", "/bin/true", 1, creator.This())
	for in, ok := range map[string]bool{"": true, "mine": true, "other": false} {
		err := h.CheckInstance(protocol.Target{Host: protocol.HostRef{Instance: in}})
		if (err == nil) != ok {
			t.Errorf("instance %q: %v", in, err)
		}
	}
	if err := CheckInstanceName(string(make([]byte, 129))); err == nil {
		t.Errorf("a 129-character instance passed")
	}
	var d time.Duration
	n, self := 0, ""
	if err := Defaults(&n, &d, time.Minute, &self); err != nil || n != 8 || d != time.Minute || self == "" {
		t.Errorf("defaults: %d %v %q %v", n, d, self, err)
	}
}

// TestHostEffectsRequireTheirKey: host.acquire, host.lookup and
// host.release without a key are refused (permanent, naming the method)
// before the provider's method runs; with one they are served, and
// host.status takes none.
func TestHostEffectsRequireTheirKey(t *testing.T) {
	p := serving{served: map[string]bool{}}
	served := p.served
	m := NewHosts(p, "i", "/bin/true", 1, creator.This()).Methods(nil)
	call := func(method, params string) error {
		_, err := m[method](context.Background(), &protocol.Call{Method: method, Params: []byte(params)})
		return err
	}
	for _, method := range []string{protocol.MethodHostAcquire.Name, protocol.MethodHostLookup.Name, protocol.MethodHostRelease.Name} {
		var pe *protocol.Error
		err := call(method, `{"key":""}`)
		if !errors.As(err, &pe) || pe.Kind != protocol.Permanent || pe.Message != method+": key is required" || served[method] {
			t.Errorf("%s without a key: %v (served %v), want permanent %q", method, err, served[method], method+": key is required")
		}
		if err := call(method, `{"key":"k"}`); err != nil || !served[method] {
			t.Errorf("%s with a key: %v (served %v)", method, err, served[method])
		}
	}
	if err := call(protocol.MethodHostStatus.Name, `{}`); err != nil || !served[protocol.MethodHostStatus.Name] {
		t.Errorf("host.status: %v (served %v)", err, served[protocol.MethodHostStatus.Name])
	}
}

// stub is a Provider none of whose methods is called.
type stub struct{ Provider }

// gate is a Gate of its reach and name.
type gate struct {
	stub
	reach func(context.Context) error
	name  string
}

func (g gate) Reach(ctx context.Context) error { return g.reach(ctx) }
func (g gate) ProviderName() string            { return g.name }

// serving is a reached Provider whose host methods note their call's
// method in served.
type serving struct {
	stub
	served map[string]bool
}

func (s serving) Reach(context.Context) error { return nil }

func (s serving) Acquire(_ context.Context, c *protocol.Call, _ protocol.AcquireParams) (protocol.AcquireResult, error) {
	return note[protocol.AcquireResult](s, c)
}

func (s serving) Lookup(_ context.Context, c *protocol.Call, _ protocol.LookupParams) (protocol.HostLookupResult, error) {
	return note[protocol.HostLookupResult](s, c)
}

func (s serving) Status(_ context.Context, c *protocol.Call, _ protocol.Base) (protocol.HostStatus, error) {
	return note[protocol.HostStatus](s, c)
}

func (s serving) Release(_ context.Context, c *protocol.Call, _ protocol.KeyParams) (protocol.Null, error) {
	return note[protocol.Null](s, c)
}

// note notes c's method in s.served and answers R's zero value.
func note[R any](s serving, c *protocol.Call) (R, error) {
	s.served[c.Method] = true
	var zero R
	return zero, nil
}
