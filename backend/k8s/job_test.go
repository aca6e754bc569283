package k8s_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/testutil/testlog"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// startJob starts the test agent as a job on host and returns its target
// and the start's reply.
func startJob(t *testing.T, p *plugin, host protocol.Target, key string) (protocol.Target, protocol.JobStartResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: key, Spec: agentSpec(key)})
	if err != nil {
		t.Fatalf("job.start: %v\n%s", err, p.Stderr.String())
	}
	return jobTargetOf(host, key, res.Handle), res
}

// agentSpec runs the test agent (its script whole as spec.cmd) as name.
func agentSpec(name string) protocol.JobSpec {
	return protocol.JobSpec{Workstream: "ws", Name: name, Harness: "mu-test-agent", Role: "full-access",
		Cmd: string(agent.Script), CommandSource: "test", Cwd: ".", Env: map[string]string{}}
}

// A spec.cmd one byte over what one exec argument takes in the pod (128
// KiB with its NUL) is refused up front with nothing left; one at it
// starts and runs (sandboxtest.CmdArgBound).
func TestJobStartCmdArgBound(t *testing.T) {
	p := start(t)
	res := p.Acquire(t, "key-bound", map[string]string{"ttl": "1h"})
	host := protocol.Target{Host: protocol.HostRef{Name: "box", Handle: res.Handle, Instance: p.decl.Instance}}
	sandboxtest.CmdArgBound(t, waitfor.Context(t, 5*time.Minute), p.Plugin.Plugin, host, agentSpec("bound"), "k8s")
}

func jobState(t *testing.T, p *plugin, jt protocol.Target) protocol.JobStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt})
	if err != nil {
		t.Fatalf("job.status: %v", err)
	}
	return st
}

// A job outlives its view and the plugin that started it; its view (the
// start's command, stdin from /dev/null) shows its terminal. The pod
// deleted behind the plugin's back: the host is gone and the job lost.
func TestJobOutlivesViewAndPluginThenPodDeleted(t *testing.T) {
	p := start(t)
	res := p.Acquire(t, "key-job", map[string]string{"ttl": "1h"})
	host := protocol.Target{Host: protocol.HostRef{Name: "box", Handle: res.Handle, Instance: p.decl.Instance}}
	jt, started := startJob(t, p, host, "job-1")
	if st := jobState(t, p, jt); st.State != protocol.JobRunning {
		t.Fatalf("job.status after start: %+v", st)
	}

	// The view, as mu runs it: a local sh with the view's env, stdin from
	// /dev/null; killed after a moment, the job runs on.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	view := exec.CommandContext(ctx, "/bin/sh", "-c", started.View.Command)
	view.Env = os.Environ()
	for k, v := range started.View.Env {
		view.Env = append(view.Env, k+"="+v)
	}
	var out testlog.LockedBuffer
	view.Stdout, view.Stderr, view.Stdin = &out, &out, nil
	if err := view.Start(); err != nil {
		t.Fatal(err)
	}
	// It shows the agent's terminal: its greeting.
	if !waitfor.Poll(waitfor.Patience, func() bool { return strings.Contains(out.String(), "mu test agent: ready") }) {
		t.Errorf("the view did not show the job's terminal: %q", out.String())
	}
	_ = view.Process.Kill()
	_ = view.Wait()
	if st := jobState(t, p, jt); st.State != protocol.JobRunning {
		t.Fatalf("job.status after the view was killed: %+v", st)
	}

	// The plugin stops (stdin EOF, as at mu's exit); another finds the job running.
	p.Stop(t)
	q := startOn(t, p.prefix)
	if st := jobState(t, q, jt); st.State != protocol.JobRunning {
		t.Fatalf("job.status from a new plugin: %+v", st)
	}

	// Deleted behind the plugin's back.
	zero := int64(0)
	if err := q.c.Client(t).CoreV1().Pods(q.c.Namespace).Delete(context.Background(), res.Handle, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	var hs protocol.HostStatus
	waitfor.Poll(10*time.Second, func() bool { // a forced delete removes the object at once; poll a little in case it lags
		hs = sandboxtest.Must(t, q, protocol.MethodHostStatus, sandboxtest.StatusParams(res.Handle))
		return hs.State == protocol.HostGone
	})
	if hs.State != protocol.HostGone {
		t.Fatalf("host.status after the pod was deleted: %+v", hs)
	}
	jobLost(t, q, jt, "after the pod was deleted")
}
