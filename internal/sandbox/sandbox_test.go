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
		protocol.MethodJobStatus: {Stopped: `{"state":"lost","reason":"why"}`, Gone: `{"state":"lost","reason":"why"}`, Unclear: `{"state":"unknown","reason":"why"}`},
		protocol.MethodJobStop:   {Stopped: `null`, Gone: `null`, Unclear: `retryable`},
		protocol.MethodJobLookup: {Stopped: `{"unknown":"why"}`, Gone: `{"none":true}`, Unclear: `{"unknown":"why"}`},
		protocol.MethodJobStart:  {Stopped: `permanent`, Gone: `permanent`, Unclear: `retryable`},
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
	down := Gate{What: "the Engine", Reach: func(context.Context) error {
		return protocol.Errorf(protocol.Retryable, "the Engine is down")
	}}
	res, err := down.wrap(protocol.MethodHostStatus, next)(context.Background(), &protocol.Call{})
	if st, ok := res.(protocol.HostStatus); err != nil || !ok || st.State != protocol.HostUnknown || st.Reason != "the Engine is down" {
		t.Errorf("host.status with the provider down: %+v %v", res, err)
	}
	if _, err := down.wrap(protocol.MethodHostAcquire, next)(context.Background(), &protocol.Call{}); err == nil {
		t.Errorf("host.acquire with the provider down succeeded")
	}
	human := Gate{Reach: func(context.Context) error { return protocol.HumanError("fix it", "a bad key") }}
	var pe *protocol.Error
	if _, err := human.wrap(protocol.MethodHostLookup, next)(context.Background(), &protocol.Call{}); !errors.As(err, &pe) || pe.Kind != protocol.Human {
		t.Errorf("a person's reach error on a read: %v, want it as it is", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := down.wrap(protocol.MethodHostLookup, next)(ctx, &protocol.Call{}); !errors.As(err, &pe) || pe.Kind != protocol.Retryable {
		t.Errorf("a cancelled call: %v, want retryable", err)
	}
	if served {
		t.Errorf("a call was served before the provider was reached")
	}
	up := Gate{Reach: func(context.Context) error { return nil }}
	if res, _ := up.wrap(protocol.MethodHostLookup, next)(context.Background(), &protocol.Call{}); res != "served" {
		t.Errorf("with the provider up: %v", res)
	}
}

// TestAbandonedOnlyWhenNoAcquireRuns: this process's own create is
// abandoned only while no acquire of its key runs here; another's whose
// liveness cannot be told, only once tooOld says so.
func TestAbandonedOnlyWhenNoAcquireRuns(t *testing.T) {
	h := NewHosts(Provider{}, "i", "/bin/true", 1, creator.This())
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
	h := NewHosts(Provider{}, "mine", "/bin/true", 1, creator.This())
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
	h := NewHosts(Provider{}, "i", "/bin/true", 1, creator.This())
	served := map[string]bool{}
	m := h.Methods(HostMethods{
		Acquire: serveAs[protocol.AcquireParams](served),
		Lookup:  serveAs[protocol.LookupParams](served),
		Status:  serveAs[protocol.Base](served),
		Release: serveAs[protocol.KeyParams](served),
	}, nil, Gate{Reach: func(context.Context) error { return nil }})
	call := func(method, params string) error {
		_, err := m[method](context.Background(), &protocol.Call{Method: method, Params: []byte(params)})
		return err
	}
	for _, method := range []string{protocol.MethodHostAcquire, protocol.MethodHostLookup, protocol.MethodHostRelease} {
		var pe *protocol.Error
		err := call(method, `{"key":""}`)
		if !errors.As(err, &pe) || pe.Kind != protocol.Permanent || pe.Message != method+": key is required" || served[method] {
			t.Errorf("%s without a key: %v (served %v), want permanent %q", method, err, served[method], method+": key is required")
		}
		if err := call(method, `{"key":"k"}`); err != nil || !served[method] {
			t.Errorf("%s with a key: %v (served %v)", method, err, served[method])
		}
	}
	if err := call(protocol.MethodHostStatus, `{}`); err != nil || !served[protocol.MethodHostStatus] {
		t.Errorf("host.status: %v (served %v)", err, served[protocol.MethodHostStatus])
	}
}

// serveAs is a host method that notes its call's method in served.
func serveAs[P any](served map[string]bool) func(context.Context, *protocol.Call, P) (any, error) {
	return func(_ context.Context, c *protocol.Call, _ P) (any, error) {
		served[c.Method] = true
		return nil, nil
	}
}
