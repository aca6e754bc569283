package sandboxtest

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
)

// endsWithin bounds the wait for a host to end itself: generous (a pod's
// deadline is enforced by the kubelet's sync, up to a minute late), a
// bound on a wait and never a measurement.
const endsWithin = 4 * time.Minute

// Status is host.status of handle.
func (p *Plugin) Status(t testing.TB, handle string) protocol.HostStatus {
	t.Helper()
	return Must(t, p, protocol.MethodHostStatus, StatusParams(handle))
}

// EndsItself: the host of key, acquired with params (a provider's own plus
// a short ttl or idle), ends with no call asking: host.status reads gone
// (polled until it does, within a generous bound), stays gone, and
// host.release of the key still resolves.
func EndsItself(t *testing.T, p *Plugin, key, handle string) {
	t.Helper()
	var last protocol.HostStatus
	waitfor.Poll(endsWithin, func() bool {
		last = p.Status(t, handle)
		return last.State == protocol.HostGone
	})
	if last.State != protocol.HostGone {
		t.Fatalf("host %s never read gone within %v: last %+v", key, endsWithin, last)
	}
	if hs := p.Status(t, handle); hs.State != protocol.HostGone {
		t.Errorf("host %s read gone, then %+v", key, hs)
	}
	Must(t, p, protocol.MethodHostRelease, KeyParams(key))
	if hs := p.Status(t, handle); hs.State != protocol.HostGone {
		t.Errorf("host %s after release: %+v, want gone", key, hs)
	}
}

// EndsAtDeadline: a host acquired with a short ttl (longer than its
// acquire takes) ends by itself after it.
func EndsAtDeadline(t *testing.T, p *Plugin, key string, ttl time.Duration, extra map[string]string) {
	t.Helper()
	params := map[string]string{"ttl": ttl.String()}
	maps.Copy(params, extra)
	res := p.Acquire(t, key, params)
	if res.DeadlineAt == nil {
		t.Fatalf("acquire with ttl %v: no deadlineAt in %+v", ttl, res)
	}
	EndsItself(t, p, key, res.Handle)
}

// IdleEndsOnlyWhenIdle: a host acquired with a short idle time stays up
// while it is kept busy, by link.exec calls (a run a fifth of the idle
// time apart, for three idle times) and by one run three idle times long,
// and ends by itself once nothing runs.
func IdleEndsOnlyWhenIdle(t *testing.T, p *Plugin, key string, idle time.Duration, extra map[string]string) {
	t.Helper()
	params := map[string]string{"idle": idle.String()}
	maps.Copy(params, extra)
	res := p.Acquire(t, key, params)
	if res.IdleReclaimMs == nil || *res.IdleReclaimMs != idle.Milliseconds() {
		t.Fatalf("acquire with idle %v: %+v", idle, res)
	}
	for end := time.Now().Add(3 * idle); time.Now().Before(end); time.Sleep(idle / 5) {
		if r := p.Run(t, res.Handle, "true"); ExitCode(r) != "0" {
			t.Fatalf("a run while kept busy: %+v", r)
		}
	}
	if hs := p.Status(t, res.Handle); hs.State != protocol.HostUp {
		t.Fatalf("after %v of calls %v apart (idle %v): %+v, want up", 3*idle, idle/5, idle, hs)
	}
	long := fmt.Sprintf("sleep %d; echo done", int(3*idle/time.Second))
	if r := p.Run(t, res.Handle, long); ExitCode(r) != "0" || r.Stdout != "done\n" {
		t.Fatalf("a run of %v on a host idle after %v: %+v", 3*idle, idle, r)
	}
	if hs := p.Status(t, res.Handle); hs.State != protocol.HostUp {
		t.Fatalf("right after a run of %v (idle %v): %+v, want up", 3*idle, idle, hs)
	}
	EndsItself(t, p, key, res.Handle)
}
