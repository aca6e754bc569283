//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/dockercli"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
	"github.com/mu-org/mu-plugins/protocol/caller/replay"
)

// The drill's plugin is the one users run: a never-started container of a
// killed acquire is rolled back by the next lookup because its creator is
// gone, not once inFlightMs (2 minutes) has passed, so each resolve settles
// within killAndResolve's bound (100 tries 300 ms apart) only with that.
func (e *Env) drillDocker() spec { return e.dockerPlugin() }

func acquireParams(key string) protocol.AcquireParams {
	return protocol.AcquireParams{Base: protocol.Base{Target: drive.HostTarget("it")}, Key: key, Params: map[string]string{"ttl": "1h"}}
}

// hostContainers counts a key's containers: hosts, and fence placeholders.
func hostContainers(t testing.TB, e *Env, key string) (hosts, fences int) {
	for _, id := range labelled(t, itLabel+"="+e.Project, "org.mu-plugins.key="+key) {
		if dockercli.Docker(t, "inspect", "-f", `{{index .Config.Labels "org.mu-plugins.fence"}}`, id) == "1" {
			fences++
		} else {
			hosts++
		}
	}
	return hosts, fences
}

// TestDrillKillHostAcquire: host.acquire SIGKILLed at random points; after
// resolution (a fenced lookup) the key has exactly one container when the
// acquire is found, none when it resolved none.
func TestDrillKillHostAcquire(t *testing.T) {
	d := newDrill(t)
	e, s, j, run, p := d.e, d.s, d.j, d.run, d.p
	span := measureSpan(t, 3, s, j, func(i int) (effectCall, func() error, error) {
		key := fmt.Sprintf("probe-%s-%d", run, i)
		return effectCall{protocol.MethodHostAcquire.Name, key, acquireParams(key)}, func() error {
			_, err := caller.Invoke(waitfor.Context(t, time.Minute), p, protocol.MethodHostRelease, protocol.KeyParams{Base: protocol.Base{Target: drive.HostTarget("it")}, Key: key})
			return err
		}, nil
	})
	runDrill(t, "kill-host.acquire", 4, span, func(t *testing.T, i int, killAfter time.Duration) (string, bool) {
		key := fmt.Sprintf("acq-%s-%d", run, i)
		out, err := killAndResolve(t, s, j, effectCall{protocol.MethodHostAcquire.Name, key, acquireParams(key)}, killAfter)
		if err != nil {
			t.Errorf("%s: %v", key, err)
			return "error", false
		}
		hosts, fences := hostContainers(t, e, key)
		good := true
		if out.tries > 1 {
			t.Logf("%s: resolved %s after %d lookups", key, out.how, out.tries)
		}
		switch out.how {
		case "answered", string(replay.Found):
			var res protocol.AcquireResult
			if err := json.Unmarshal(out.result, &res); err != nil || res.Handle == "" {
				t.Errorf("%s: %s without a handle: %s", key, out.how, out.result)
				good = false
			}
			if hosts != 1 {
				t.Errorf("%s: %s, and %d host containers: want exactly 1", key, out.how, hosts)
				good = false
			}
		case string(replay.None), "not-sent":
			if hosts != 0 {
				t.Errorf("%s: resolved none, and %d host containers: want 0", key, hosts)
				good = false
			}
			if out.how == string(replay.None) && fences != 1 {
				t.Errorf("%s: resolved none by a fenced lookup, and %d fence placeholders: want 1", key, fences)
				good = false
			}
		default:
			t.Errorf("%s: resolved %s", key, out.how)
			good = false
		}
		releaseKey(t, s, key)
		return out.how, good
	})
}

// releaseKey releases a key's host through a fresh plugin (placeholders
// stay: the run's cleanup removes them by label).
func releaseKey(t *testing.T, s spec, key string) {
	q, err := startPluginErr(t, s)
	if err != nil {
		t.Errorf("release %s: %v", key, err)
		return
	}
	defer q.Stop()
	if _, err := caller.Invoke(waitfor.Context(t, time.Minute), q, protocol.MethodHostRelease, protocol.KeyParams{Base: protocol.Base{Target: drive.HostTarget("it")}, Key: key}); err != nil {
		t.Errorf("release %s: %v", key, err)
	}
}

// TestDrillKillHostRelease: host.release SIGKILLed at random points; once
// reissued by the replay rules, the key has no container left.
func TestDrillKillHostRelease(t *testing.T) {
	d := newDrill(t)
	e, s, j, run, p := d.e, d.s, d.j, d.run, d.p
	span := measureSpan(t, 3, s, j, func(i int) (effectCall, func() error, error) {
		key := fmt.Sprintf("probe-%s-%d", run, i)
		_, err := caller.Invoke(waitfor.Context(t, time.Minute), p, protocol.MethodHostAcquire, acquireParams(key))
		return effectCall{protocol.MethodHostRelease.Name, key, protocol.KeyParams{Base: protocol.Base{Target: drive.HostTarget("it")}, Key: key}}, nil, err
	})
	runDrill(t, "kill-host.release", 4, span, func(t *testing.T, i int, killAfter time.Duration) (string, bool) {
		key := fmt.Sprintf("rel-%s-%d", run, i)
		q, err := startPluginErr(t, s)
		if err != nil {
			t.Errorf("%s: %v", key, err)
			return "error", false
		}
		_, err = caller.Invoke(waitfor.Context(t, time.Minute), q, protocol.MethodHostAcquire, acquireParams(key))
		q.Stop()
		if err != nil {
			t.Errorf("%s: acquire: %v", key, err)
			return "error", false
		}
		out, err := killAndResolve(t, s, j, effectCall{protocol.MethodHostRelease.Name, key, protocol.KeyParams{Base: protocol.Base{Target: drive.HostTarget("it")}, Key: key}}, killAfter)
		if err != nil {
			t.Errorf("%s: %v", key, err)
			return "error", false
		}
		hosts, fences := hostContainers(t, e, key)
		if out.how == "not-sent" { // never written: the host must still be there
			if hosts != 1 {
				t.Errorf("%s: release never sent, and %d host containers: want 1", key, hosts)
				return out.how, false
			}
			releaseKey(t, s, key)
			return out.how, true
		}
		if out.how != "answered" && out.how != string(replay.Done) {
			t.Errorf("%s: resolved %s, want done", key, out.how)
			return out.how, false
		}
		if hosts+fences != 0 {
			t.Errorf("%s: released (%s), and %d containers left", key, out.how, hosts+fences)
			return out.how, false
		}
		return out.how, true
	})
}
