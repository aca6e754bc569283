package k8s_test

import (
	"context"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// The kubelet restarted under a running job: the job survives (its pod and
// its tmux keep running), and the plugin reads it running again once the
// kubelet answers (its broken exec channels are replaced).
func TestKubeletRestartJobSurvives(t *testing.T) {
	p := start(t)
	res := p.acquire(t, "key-kubelet", map[string]string{"ttl": "1h"})
	host := protocol.Target{Host: protocol.HostRef{Name: "box", Handle: res.Handle, Instance: p.decl.Instance}}
	jt, _ := startJob(t, p, host, "job-kubelet")
	p.c.Restart(t, "kubelet")
	var st protocol.JobStatus
	for i := 0; i < 30; i++ { // a call on a channel the restart broke is unknown, once
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		st, _ = p.JobStatus(ctx, jt)
		cancel()
		if st.State != protocol.JobUnknown && st.State != "" {
			break
		}
		time.Sleep(time.Second)
	}
	if st.State != protocol.JobRunning {
		t.Fatalf("job.status after the kubelet restarted: %+v", st)
	}
	if r := p.run(t, res.Handle, "echo alive"); r.Stdout != "alive\n" {
		t.Errorf("link after the kubelet restarted: %q %q", r.Stdout, r.Stderr)
	}
	p.must(t, "host.release", keyParams("key-kubelet"), nil)
}

// The API server killed and started again under an acquire in flight: the
// acquire answers (a result or an error), and the key then resolves by
// lookup, as mu's replay does, to exactly one ready pod or none; released,
// nothing is left.
func TestAPIServerRestartMidAcquire(t *testing.T) {
	p := start(t)
	done := make(chan *protocol.AcquireResult, 1)
	go func() {
		var res protocol.AcquireResult
		if err := p.call(t, "host.acquire", acquireParams("key-apiserver", nil), &res); err != nil {
			t.Logf("acquire across the restart: %v", err)
			done <- nil
			return
		}
		done <- &res
	}()
	time.Sleep(300 * time.Millisecond) // the create on its way (not an assertion)
	p.c.Kill(t, "kube-apiserver")
	p.c.Start(t, "kube-apiserver")
	got := <-done
	q := startOn(t, p.prefix)
	var lk protocol.HostLookupResult
	for i := 0; i < 60; i++ {
		q.must(t, "host.lookup", lookupParams("key-apiserver", true), &lk)
		if !lk.Pending && lk.Unknown == "" {
			break
		}
		time.Sleep(2 * time.Second)
	}
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
	q.must(t, "host.release", keyParams("key-apiserver"), nil)
	for _, pod := range prefixed(pods(t, q.c, ""), q.prefix) {
		if pod.Labels["org.mu-plugins/fence"] != "1" {
			t.Errorf("pod %s left", pod.Name)
		}
	}
}
