package sandboxtest

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/contract"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/protocol"
)

// The checks of what the providers share (internal/sandbox), each run by
// every provider's tests on a host h of its own.

// ExecStreams: a run's exit code, stdout and stderr come back apart and
// whole.
func ExecStreams(t *testing.T, p *Plugin, h string) {
	t.Helper()
	r := p.Run(t, h, "echo out; echo err >&2; exit 7")
	if ExitCode(r) != "7" || r.Stdout != "out\n" || r.Stderr != "err\n" || r.Partial {
		t.Errorf("exec: %+v code %s", r, ExitCode(r))
	}
}

// ExecScriptIsData: the script is data: quotes, $, backticks, trailing
// newlines, and no stdin.
func ExecScriptIsData(t *testing.T, p *Plugin, h string) {
	t.Helper()
	script := "x='a \"b\" $HOME `c`'\nprintf '%s|' \"$x\"\ncat\nprintf 'end\\n\\n\\n'\n\n\n"
	if r := p.Run(t, h, script); r.Stdout != "a \"b\" $HOME `c`|end\n\n\n" || ExitCode(r) != "0" {
		t.Errorf("script bytes: %q code %s", r.Stdout, ExitCode(r))
	}
}

// ExecOversizedRefused: a script over the declared maxScriptBytes is
// refused before anything runs.
func ExecOversizedRefused(t *testing.T, p *Plugin, h string) {
	t.Helper()
	big := strings.Repeat("#", int(p.Declaration().Seams.Link.MaxScriptBytes)+1)
	if err := Err(t, p, protocol.MethodLinkExec, ExecParams(h, big, ".", 10_000)); err == nil || err.Kind != "permanent" {
		t.Errorf("oversized script: %v", err)
	}
}

// ExecConcurrent: n runs at once on one host each get their own output
// and exit code.
func ExecConcurrent(t *testing.T, p *Plugin, h string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := p.Run(t, h, fmt.Sprintf("sleep 0.$((%d %% 3)); echo %d; echo e%d >&2; exit %d", i, i, i, i))
			if r.Stdout != fmt.Sprintf("%d\n", i) || r.Stderr != fmt.Sprintf("e%d\n", i) || ExitCode(r) != fmt.Sprint(i) {
				t.Errorf("run %d: %+v code %s", i, r, ExitCode(r))
			}
		}()
	}
	wg.Wait()
}

// ExecTimeoutStops: remoteOnTimeout "stopped": when a run times out,
// nothing it started is left on the host by the time the answer comes
// (ps lists the host's processes from outside the plugin), not even what
// left its process group; the link still works after; a finished run's
// background leftovers are stopped too.
func ExecTimeoutStops(t *testing.T, p *Plugin, h string, ps func(args ...string) string) {
	t.Helper()
	script := `echo started; sleep 301 & setsid sleep 302 & (trap '' TERM HUP; sleep 303) & nohup sleep 304 >/dev/null 2>&1 & sleep 300`
	r := Must(t, p, protocol.MethodLinkExec, ExecParams(h, script, ".", 1500))
	if r.ExitCode != nil {
		t.Fatalf("timed out run: exitCode %d, want null", *r.ExitCode)
	}
	if r.Stdout != "started\n" {
		t.Errorf("output before the timeout: %q", r.Stdout)
	}
	if out := ps("-eo", "pid,args"); strings.Contains(out, "sleep 30") {
		t.Errorf("the timed-out run left processes:\n%s", out)
	}
	if r := p.Run(t, h, "echo alive"); r.Stdout != "alive\n" {
		t.Errorf("after the timeout: %q", r.Stdout)
	}
	p.Run(t, h, "sleep 305 & echo bg")
	if out := ps("-eo", "args"); strings.Contains(out, "sleep 305") {
		t.Errorf("a finished run left a background process:\n%s", out)
	}
}

// AcquireWithTerms acquires key with ttl 2h, idle 30m, maxJobs 3 and a
// provider's own params (extra), checks that the result carries those
// terms (deadlineAt the acquire's time + 2 h, idleReclaimMs and maxJobs
// as asked) and that an unfenced lookup finds the same result, and
// returns it with the params it sent.
func AcquireWithTerms(t *testing.T, p *Plugin, key string, extra map[string]string) (protocol.AcquireResult, map[string]string) {
	t.Helper()
	params := map[string]string{"ttl": "2h", "idle": "30m", "maxJobs": "3"}
	maps.Copy(params, extra)
	before := time.Now()
	res := p.Acquire(t, key, params)
	if res.DeadlineAt == nil || *res.DeadlineAt < before.Add(2*time.Hour).UnixMilli() || *res.DeadlineAt > time.Now().Add(2*time.Hour).UnixMilli() {
		t.Errorf("deadlineAt %v is not acquire time + 2h", res.DeadlineAt)
	}
	if res.IdleReclaimMs == nil || *res.IdleReclaimMs != 30*60*1000 || res.MaxJobs == nil || *res.MaxJobs != 3 {
		t.Errorf("result %+v", res)
	}
	lk := Must(t, p, protocol.MethodHostLookup, LookupParams(key, false))
	if lk.Found == nil || !reflect.DeepEqual(*lk.Found, res) {
		t.Errorf("lookup: %+v, want found %+v", lk, res)
	}
	return res, params
}

// FencedNone: a fenced lookup of a key never acquired answers none, a
// late acquire of the key then fails (permanent, "fenced"), and a lookup
// still answers none. What the fence left on the provider is the
// caller's to check.
func FencedNone(t *testing.T, p *Plugin, key string) {
	t.Helper()
	lk := Must(t, p, protocol.MethodHostLookup, LookupParams(key, true))
	if !lk.None {
		t.Fatalf("fenced lookup of a key never acquired: %+v", lk)
	}
	err := Err(t, p, protocol.MethodHostAcquire, AcquireParams(key, nil))
	if err == nil || err.Kind != "permanent" || !strings.Contains(err.Message, "fenced") {
		t.Fatalf("acquire after a fenced none: %v, want permanent 'fenced'", err)
	}
	lk = Must(t, p, protocol.MethodHostLookup, LookupParams(key, false))
	if !lk.None {
		t.Errorf("lookup after the fence: %+v", lk)
	}
}

// RunSuite runs the contract suite with opts (Argv set by the caller;
// Params and Out set here) against the plugin named name: every failure,
// and every skip not in skipsOK, fails the test, as does any of mustPass
// not passing.
func RunSuite(t *testing.T, name string, opts contract.Options, skipsOK map[string]bool, mustPass ...string) *contract.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var out strings.Builder
	opts.Params = map[string]string{"ttl": "1h"}
	opts.Out = &out
	rep, err := contract.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	drive.Verdicts(t, rep, name, func(check string) bool { return skipsOK[check] }, mustPass...)
	t.Logf("the suite against %s: %s in %s", name, rep.Summary(), rep.Elapsed.Round(time.Millisecond))
	return rep
}

// BenchExecTrue compares link.exec of `true` on h (over the plugin's
// pooled exec channel) with the peer's own way (peerName: peer), as
// sub-benchmarks.
func BenchExecTrue(b *testing.B, p *Plugin, h, peerName string, peer func(b *testing.B)) {
	b.Run("plugin", func(b *testing.B) {
		for b.Loop() {
			if r := p.Run(b, h, "true"); ExitCode(r) != "0" {
				b.Fatalf("exec: %+v", r)
			}
		}
	})
	b.Run(peerName, func(b *testing.B) {
		for b.Loop() {
			peer(b)
		}
	})
}

// BenchAcquire is host.acquire's half of an acquire benchmark, as the
// sub-benchmark "plugin": an acquire of a new key each time, its release
// outside the timer.
func BenchAcquire(b *testing.B, p *Plugin) {
	b.Run("plugin", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			key := fmt.Sprintf("bench-acq-%d", i)
			p.Acquire(b, key, nil)
			b.StopTimer()
			Must(b, p, protocol.MethodHostRelease, KeyParams(key))
			b.StartTimer()
		}
	})
}

// Declaration: the declaration loads, and declares what every provider
// does (sandbox.Seams): keyed acquire with lookup and fence, the link's
// fetch, push, runs stopped on timeout and its reach checks, tmuxjob's
// job seam of kind with its channel named channel.
func Declaration(t *testing.T, decl protocol.InitializeResult, kind, channel string) {
	t.Helper()
	if err := protocol.ValidateDeclaration(decl); err != nil {
		t.Fatalf("the declaration breaks a load rule: %v", err)
	}
	s := decl.Seams
	if s.Host == nil || !s.Host.Acquire.Lookup || !s.Host.Acquire.FenceKey || s.Host.Acquire.InFlightMs == nil {
		t.Errorf("host.acquire caps: %+v", s.Host)
	}
	if l := s.Link; l == nil || !l.Fetch || !l.CanPush() || l.RemoteOnTimeout != "stopped" || l.Quiescence != "provable" ||
		l.MaxScriptBytes <= 0 || len(l.Checks) != 1 || l.Checks[0] != "reach" {
		t.Errorf("link: %+v", s.Link)
	}
	if j := s.Job; j == nil || j.Kind != kind || j.View != protocol.ViewDetached || j.Handle != protocol.HandleReply ||
		!j.Start.Lookup || !j.Start.FenceKey || j.OutlivesHost == nil || *j.OutlivesHost || j.FirstTurn != protocol.FirstTurnOnSend ||
		j.Channel != channel || j.Honours == nil || !j.Honours.Command || !j.Honours.Env || j.Honours.Sockets {
		t.Errorf("job: %+v", s.Job)
	}
	if c := s.Channel; c == nil || c.Name != channel || c.Caps.Receipt != "exact" || c.Caps.Dedupe != "exact" || c.Caps.Watch != "stream" {
		t.Errorf("channel: %+v", s.Channel)
	}
}
