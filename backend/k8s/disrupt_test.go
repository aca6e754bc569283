package k8s_test

import (
	"context"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The kubelet restarted under a running job: the job survives (its pod and
// its tmux keep running), and the plugin reads it running again once the
// kubelet answers (its broken exec channels are replaced).
func TestKubeletRestartJobSurvives(t *testing.T) {
	p := start(t)
	res := p.Acquire(t, "key-kubelet", map[string]string{"ttl": "1h"})
	host := protocol.Target{Host: protocol.HostRef{Name: "box", Handle: res.Handle, Instance: p.decl.Instance}}
	jt, _ := startJob(t, p, host, "job-kubelet")
	p.c.Restart(t, "kubelet")
	var st protocol.JobStatus
	for i := 0; i < 30; i++ { // a call on a channel the restart broke is unknown, once
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		st, _ = caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt})
		cancel()
		if st.State != protocol.JobUnknown && st.State != "" {
			break
		}
		time.Sleep(time.Second)
	}
	if st.State != protocol.JobRunning {
		t.Fatalf("job.status after the kubelet restarted: %+v", st)
	}
	if r := p.Run(t, res.Handle, "echo alive"); r.Stdout != "alive\n" {
		t.Errorf("link after the kubelet restarted: %q %q", r.Stdout, r.Stderr)
	}
	sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("key-kubelet"))
}
