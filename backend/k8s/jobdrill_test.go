package k8s_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/crashdrill"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// TestCrashDrillJobStart SIGKILLs the plugin at points spread over
// job.start, the trials side by side on one pod, then resolves each key as
// mu's replay does (a fenced job.lookup): a found start has its job
// running, a none has no process of it and a late start of the key is
// refused. Every job is then stopped and no agent is left.
func TestCrashDrillJobStart(t *testing.T) {
	trials := drillTrials(t)
	p := start(t)
	res := p.Acquire(t, "key-jobdrill", smallPod)
	host := protocol.Target{Host: protocol.HostRef{Name: "box", Handle: res.Handle, Instance: p.decl.Instance}}
	// A whole start as a trial's fresh plugin makes it, drillConc at once.
	probes := make([]protocol.Target, drillConc)
	full := longestOf(t, drillConc, func(t *testing.T, c int) time.Duration {
		fresh := startOn(t, p.prefix)
		t0 := time.Now()
		probes[c], _ = startJob(t, fresh, host, fmt.Sprintf("probe-%d", c))
		return time.Since(t0)
	})
	for _, jt := range probes {
		stopJob(t, p, jt)
	}
	span := full + full/4
	t.Logf("a fresh plugin's whole job.start took up to %v, %d at once; killing within 0..%v", full, drillConc, span)

	var counts crashdrill.Tally
	crashdrill.Trials(t, trials, drillConc, func(t *testing.T, i int) {
		counts.Add(jobStartTrial(t, p, host, fmt.Sprintf("jd-%d", i), crashdrill.KillPoint(i, trials, span)))
	})
	t.Logf("job.lookup answers after the kill: %v", &counts)
	if left := podExec(t, p, res.Handle, "sh", "-c", "ps -eo args | grep -c '[m]u-test-agent' || true"); strings.TrimSpace(left) != "0" {
		t.Errorf("%s agents left after every job was stopped", strings.TrimSpace(left))
	}
}

// jobStartTrial starts job key on host in a plugin of q's configuration,
// SIGKILLs it after killAfter and resolves the key through q (mu's next
// invocation).
func jobStartTrial(t *testing.T, q *plugin, host protocol.Target, key string, killAfter time.Duration) string {
	params := jobStartParams(host, key)
	startOn(t, q.prefix).KillDuring("job.start", params, killAfter)
	return resolveJobStart(t, q, host, key)
}

// resolveJobStart resolves job.start of key on host as mu's replay does (a
// fenced job.lookup through q), checks that exactly its answer runs, stops
// the job and returns the answer.
func resolveJobStart(t *testing.T, q *plugin, host protocol.Target, key string) string {
	t.Helper()
	params := jobStartParams(host, key)
	jt := jobTargetOf(host, key, "")
	lk := sandboxtest.Must(t, q, protocol.MethodJobLookup, protocol.LookupParams{Base: protocol.Base{Target: jt}, Key: key, Fence: true})
	if n := agentsOf(t, q, host.Host.Handle, key); (lk.Found == nil) != (n == 0) {
		t.Errorf("%s: %d processes of its job running, want them only when found (lookup %+v)", key, n, lk)
	}
	switch {
	case lk.Found != nil:
		stopJob(t, q, jobTargetOf(host, key, lk.Found.Handle))
		return "found"
	case lk.None:
		if err := sandboxtest.Err(t, q, protocol.MethodJobStart, params); err == nil {
			t.Errorf("%s: a job.start after a fenced none succeeded", key)
		}
		return "none"
	}
	t.Errorf("%s: job.lookup %+v", key, lk)
	return "other"
}

func jobStartParams(host protocol.Target, key string) protocol.JobStartParams {
	return protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: key,
		Spec: protocol.JobSpec{Workstream: "ws", Name: key, Harness: "mu-test-agent", Role: "full-access",
			Cmd: string(agent.Script), CommandSource: "test", Cwd: ".", Env: map[string]string{"MU_DRILL_KEY": key}}}
}

// jobTargetOf is host's target naming the k8s job key (its agent ws/key).
func jobTargetOf(host protocol.Target, key, handle string) protocol.Target {
	return drive.JobTarget(host, "k8s", key, handle, "ws", key)
}

func stopJob(t *testing.T, p *plugin, jt protocol.Target) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := caller.Invoke(ctx, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: jt.Job.Key}); err != nil {
		t.Errorf("job.stop %s: %v", jt.Job.Key, err)
	}
}

// agentsOf counts the processes in the pod whose environment names key
// (seen from outside the plugin).
func agentsOf(t *testing.T, p *plugin, pod, key string) int {
	t.Helper()
	out := podExec(t, p, pod, "sh", "-c", `grep -lsxz "MU_DRILL_KEY=$1" /proc/[0-9]*/environ | wc -l`, "sh", key)
	var n int
	fmt.Sscan(out, &n)
	return n
}

// sendChains is how many agents the channel.send drill delivers to side by
// side (each agent's deliveries are in order: a turn is counted).
const sendChains = 5

// TestCrashDrillChannelSend SIGKILLs the plugin at points spread over
// channel.send to a running agent, then resolves the delivery as mu's
// replay does (receipt "exact": channel.receipt): an accepted delivery is
// exactly one turn, a not-accepted one none, ever (the next delivery's turn
// is the only one after it). The trials go to sendChains agents on one
// pod, side by side.
func TestCrashDrillChannelSend(t *testing.T) {
	trials := drillTrials(t)
	p := start(t)
	res := p.Acquire(t, "key-senddrill", smallPod)
	host := protocol.Target{Host: protocol.HostRef{Name: "box", Handle: res.Handle, Instance: p.decl.Instance}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	jts := make([]protocol.Target, sendChains)
	runs := make([]int64, sendChains)
	crashdrill.Trials(t, sendChains, sendChains, func(t *testing.T, c int) {
		jts[c], _ = startJob(t, p, host, fmt.Sprintf("sendjob-%d", c))
		runs[c] = drive.Baseline(t, ctx, p.Plugin.Plugin, jts[c]).Runs
	})
	// A whole send as a trial's fresh plugin makes it (its first call: the
	// API server's reach, the pod, a new exec channel), one to each agent
	// at once.
	full := longestOf(t, sendChains, func(t *testing.T, c int) time.Duration {
		fresh := startOn(t, p.prefix)
		t0 := time.Now()
		if _, err := caller.Invoke(ctx, fresh, protocol.MethodChannelSend, sendParams(jts[c], "probe")); err != nil {
			t.Fatalf("channel.send: %v", err)
		}
		d := time.Since(t0)
		runs[c] = drive.Settled(t, ctx, p.Plugin.Plugin, jts[c], runs[c]).Runs
		return d
	})
	span := full + full/4
	t.Logf("a fresh plugin's whole channel.send took up to %v, %d at once; killing within 0..%v", full, sendChains, span)

	var counts crashdrill.Tally
	crashdrill.Trials(t, sendChains, sendChains, func(t *testing.T, c int) {
		for i := c; i < trials; i += sendChains {
			st := sendTrial(t, ctx, p, jts[c], &runs[c], fmt.Sprintf("msg-%d", i), crashdrill.KillPoint(i, trials, span))
			counts.Add(st)
			if t.Failed() {
				return
			}
		}
	})
	t.Logf("receipts after the kill: %v", &counts)
}

func sendParams(jt protocol.Target, id string) protocol.SendParams {
	return protocol.SendParams{Base: protocol.Base{Target: jt}, Text: "drill " + id, MsgID: id, Mode: protocol.ModeFollowUp}
}

// sendTrial delivers id to jt from a plugin of q's configuration, SIGKILLs
// it after killAfter, resolves the delivery through q (channel.receipt),
// checks the turns against *runs (updated) and returns the receipt.
func sendTrial(t *testing.T, ctx context.Context, q *plugin, jt protocol.Target, runs *int64, id string, killAfter time.Duration) string {
	startOn(t, q.prefix).KillDuring("channel.send", sendParams(jt, id), killAfter)

	rc, err := caller.Invoke(ctx, q, protocol.MethodChannelReceipt, protocol.ReceiptParams{Base: protocol.Base{Target: jt}, MsgID: id})
	if err != nil {
		t.Fatalf("%s: channel.receipt: %v", id, err)
	}
	switch rc.State {
	case protocol.ReceiptAccepted:
		if obs := drive.Settled(t, ctx, q.Plugin.Plugin, jt, *runs); obs.Runs != *runs+1 {
			t.Errorf("%s accepted: runs %d after %d, want exactly one turn", id, obs.Runs, *runs)
		}
		*runs++
	case protocol.ReceiptNotAccepted:
	default:
		t.Fatalf("%s: receipt %+v", id, rc)
	}
	// The next delivery's turn is the only one past runs: a killed send
	// that was not accepted never lands later.
	next := id + "-next"
	if _, err := caller.Invoke(ctx, q, protocol.MethodChannelSend, sendParams(jt, next)); err != nil {
		t.Fatalf("%s: channel.send: %v", next, err)
	}
	if obs := drive.Settled(t, ctx, q.Plugin.Plugin, jt, *runs); obs.Runs != *runs+1 {
		t.Errorf("%s (%s): runs %d after %d, want one turn", next, rc.State, obs.Runs, *runs)
	}
	*runs++
	if again, err := caller.Invoke(ctx, q, protocol.MethodChannelReceipt, protocol.ReceiptParams{Base: protocol.Base{Target: jt}, MsgID: id}); err != nil || again.State != rc.State {
		t.Errorf("%s: receipt changed from %s to %+v %v", id, rc.State, again, err)
	}
	return rc.State
}
