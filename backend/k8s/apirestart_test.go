package k8s_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// reply is a call's answer: its result, or its error.
type reply struct {
	res json.RawMessage
	err error
}

// inFlight sends method from a plugin of prefix's configuration of its own
// (one of mu's invocations) and returns where its answer will come.
func inFlight(t *testing.T, prefix, method string, params any) <-chan reply {
	t.Helper()
	k := startOn(t, prefix)
	ch := make(chan reply, 1)
	go func() {
		res, err := k.Call(context.Background(), method, params, k.Budget)
		ch <- reply{res, err}
	}()
	return ch
}

// outcome checks an answer given across the API server's restart: a
// result, or a typed error saying nothing happened (retryable) or that it
// may have (unknown-outcome). It returns "ok" or the error's kind.
func outcome(t *testing.T, what string, r reply) string {
	t.Helper()
	if r.err == nil {
		return "ok"
	}
	var re *caller.RemoteError
	if !errors.As(r.err, &re) || (re.Kind != protocol.Retryable && re.Kind != protocol.UnknownOutcome) {
		t.Errorf("%s across the restart: %v, want a result or a retryable or unknown-outcome error", what, r.err)
		return "bad"
	}
	t.Logf("%s across the restart: %s: %s", what, re.Kind, re.Message)
	return string(re.Kind)
}

// TestAPIServerRestartMidCalls kills the API server and starts it again
// under calls in flight, each from a plugin of its own (mu's invocations):
// an acquire, a link.exec mid-run, a release and a job.start; and a warm
// exec channel crosses the restart. While the server is down, host.status
// and job.status answer unknown, never gone or lost. Every answer is the
// call's right result or a typed retryable or unknown-outcome error;
// resolved afterwards by mu's replay rules (lookup, reissued release,
// fenced job.lookup), each effect happened exactly once or not at all, and
// nothing is left.
func TestAPIServerRestartMidCalls(t *testing.T) {
	p := start(t)
	a := p.Acquire(t, "api-a", smallPod)
	p.Acquire(t, "api-rel", smallPod)
	host := protocol.Target{Host: protocol.HostRef{Name: "box", Handle: a.Handle, Instance: p.decl.Instance}}
	jt, _ := startJob(t, p, host, "api-job")
	warm := startOn(t, p.prefix)
	warm.Run(t, a.Handle, "true")

	acq := inFlight(t, p.prefix, "host.acquire", sandboxtest.AcquireParams("api-acq", smallPod))
	run := inFlight(t, p.prefix, "link.exec", sandboxtest.ExecParams(a.Handle, "export MU_API_RUN=1; sleep 300; echo done", ".", 60_000))
	rel := inFlight(t, p.prefix, "host.release", sandboxtest.KeyParams("api-rel"))
	job := inFlight(t, p.prefix, "job.start", jobStartParams(host, "api-job2"))
	time.Sleep(500 * time.Millisecond) // the calls on their way (not an assertion)
	t0 := time.Now()
	p.c.Kill(t, "kube-apiserver")

	hs := sandboxtest.Must(t, p, protocol.MethodHostStatus, sandboxtest.StatusParams(a.Handle))
	if hs.State != protocol.HostUnknown {
		t.Errorf("host.status with the API server down: %+v, want unknown", hs)
	}
	if st := jobState(t, p, jt); st.State != protocol.JobUnknown {
		t.Errorf("job.status with the API server down: %+v, want unknown", st)
	}
	p.c.Start(t, "kube-apiserver")
	t.Logf("the API server down and up again in %v", time.Since(t0))

	apiRestartExec(t, p, warm, a.Handle, <-run)
	t.Logf("exec checked at %v", time.Since(t0))
	apiRestartAcquire(t, p, <-acq)
	t.Logf("acquire resolved at %v", time.Since(t0))
	if o := outcome(t, "host.release", <-rel); o != "bad" {
		sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("api-rel")) // reissued, as mu does
		if st := releaseState(t, p, p.podName(t, "api-rel")); st != "gone" {
			t.Errorf("the released pod is %s after the reissued release", st)
		}
	}
	outcome(t, "job.start", <-job)
	if got := resolveJobStart(t, p, host, "api-job2"); got == "other" {
		t.Errorf("job.start across the restart did not resolve")
	}
	t.Logf("release and job.start resolved at %v", time.Since(t0))
	if st := jobState(t, p, jt); st.State != protocol.JobRunning {
		t.Errorf("job.status after the restart: %+v", st)
	}
	stopJob(t, p, jt)
	sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("api-a"))
	for _, pod := range prefixed(pods(t, p.c, ""), p.prefix) {
		if pod.Labels["org.mu-plugins/fence"] != "1" {
			t.Errorf("pod %s left", pod.Name)
		}
	}
}

// apiRestartExec checks link.exec's answer across the restart (the run's
// right result, or no exit code at all), that no process of the run
// outlives it, and that the warm channel's plugin answers right after.
func apiRestartExec(t *testing.T, p, warm *plugin, pod string, r reply) {
	t.Helper()
	if outcome(t, "link.exec", r) == "ok" {
		var er protocol.ExecResult
		if err := json.Unmarshal(r.res, &er); err != nil || sandboxtest.ExitCode(er) != "0" || er.Stdout != "done\n" {
			t.Errorf("link.exec across the restart: %s (%v): a wrong answer", r.res, err)
		}
	}
	left := func() string {
		return strings.TrimSpace(podExec(t, p, pod, "sh", "-c", `grep -lsxz MU_API_RUN=1 /proc/[0-9]*/environ | wc -l`))
	}
	if n := left(); n != "0" {
		t.Errorf("%s processes of the run left after its answer", n)
	}
	// The warm channel broke with the restart: the next call opens
	// another (or answers a typed error: never a wrong answer).
	er, err := sandboxtest.Ask(t, warm, protocol.MethodLinkExec, sandboxtest.ExecParams(pod, "echo again", ".", 60_000))
	if err != nil {
		outcome(t, "link.exec on the warm plugin", reply{err: err})
		if !waitfor.Poll(time.Minute, func() bool {
			er, err = sandboxtest.Ask(t, warm, protocol.MethodLinkExec, sandboxtest.ExecParams(pod, "echo again", ".", 60_000))
			return err == nil
		}) {
			t.Fatalf("link.exec on the warm plugin never answered again")
		}
	}
	if sandboxtest.ExitCode(er) != "0" || er.Stdout != "again\n" {
		t.Errorf("link.exec on the warm plugin after the restart: %+v", er)
	}
}

// apiRestartAcquire checks acquire's answer across the restart against
// the key's fenced lookup (mu's replay): one ready pod, the one answered,
// or none; then releases it.
func apiRestartAcquire(t *testing.T, p *plugin, r reply) {
	t.Helper()
	var got *protocol.AcquireResult
	if outcome(t, "host.acquire", r) == "ok" {
		got = new(protocol.AcquireResult)
		if err := json.Unmarshal(r.res, got); err != nil {
			t.Fatalf("host.acquire: %s: %v", r.res, err)
		}
	}
	var lk protocol.HostLookupResult
	waitfor.Poll(2*time.Minute, func() bool {
		lk = p.Lookup(t, "api-acq", true)
		return !lk.Pending && lk.Unknown == ""
	})
	switch {
	case lk.Found != nil:
		if got != nil && got.Handle != lk.Found.Handle {
			t.Errorf("acquire answered %s, lookup found %s", got.Handle, lk.Found.Handle)
		}
	case lk.None:
		if got != nil {
			t.Errorf("acquire answered %s, lookup none", got.Handle)
		}
	default:
		t.Fatalf("lookup after the restart: %+v", lk)
	}
	sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("api-acq"))
}
