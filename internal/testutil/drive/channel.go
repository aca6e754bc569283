package drive

import (
	"context"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/panes"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// HostTarget is the target of the host name (no handle, no job).
func HostTarget(name string) protocol.Target {
	return protocol.Target{Host: protocol.HostRef{Name: name}}
}

// JobTarget is host's target naming a job of kind (its key, and its
// handle: "" where the kind's start gives none) and its agent ws/name, at
// incarnation 1.
func JobTarget(host protocol.Target, kind, key, handle, ws, name string) protocol.Target {
	t := host
	t.Job = &protocol.JobRef{Kind: kind, Key: key, Handle: handle}
	t.Agent = &protocol.AgentRef{Workstream: ws, Name: name, Incarnation: 1}
	return t
}

// Baseline polls channel.baseline on the job jt until the harness reported
// its first state (spawn readiness), and returns it; an error, or none
// within waitfor.Patience, fails the test.
func Baseline(t testing.TB, ctx context.Context, p *caller.Plugin, jt protocol.Target) *protocol.Baseline {
	t.Helper()
	var b *protocol.Baseline
	waitfor.Eventually(t, "channel.baseline not null", func() bool {
		var err error
		if b, err = caller.Invoke(ctx, p, protocol.MethodChannelBaseline, protocol.Base{Target: jt}); err != nil {
			t.Fatalf("channel.baseline: %v", err)
		}
		return b != nil
	})
	return b
}

// Settled watches the job jt for the turn past after (channel.watch) and
// returns its observation; an error, a watch that ends otherwise, or none
// within 2 minutes fails the test.
func Settled(t testing.TB, ctx context.Context, p *caller.Plugin, jt protocol.Target, after int64) protocol.Observation {
	t.Helper()
	w, err := p.Watch(ctx, protocol.WatchParams{Base: protocol.Base{Target: jt}, AfterRuns: &after}, 0)
	if err != nil {
		t.Fatalf("channel.watch: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	n, err := w.Wait(wctx)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	if n.Settled == nil {
		t.Fatalf("watch ended with %+v, not settled", n)
	}
	return n.Settled.Observation
}

// Reattach is a spawn's view killed and re-attached, as mu does it: the
// pane view (a job's view in tm) killed, job jt still runs (job.status
// through p), and job.attach's view, opened as the pane again, shows
// want.
func Reattach(t testing.TB, ctx context.Context, p *caller.Plugin, tm *panes.Panes, jt protocol.Target, view, again, want string) {
	t.Helper()
	tm.Run(t, "kill-session", "-t", "="+view)
	if st, err := caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt}); err != nil || st.State != protocol.JobRunning {
		t.Fatalf("job.status after the view was killed: %+v %v", st, err)
	}
	v, err := caller.Invoke(ctx, p, protocol.MethodJobAttach, protocol.Base{Target: jt})
	if err != nil {
		t.Fatalf("job.attach: %v", err)
	}
	tm.Open(t, again, v.Command, v.Env)
	tm.Shows(t, again, want)
}
