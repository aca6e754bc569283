package k8s_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/backend/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/protocol"
)

// TestCrashDrillJobStart SIGKILLs the plugin at random points of job.start
// on one pod, then resolves the key as mu's replay does (a fenced
// job.lookup): a found start has its job running, a none has no process of
// it and a late start of the key is refused. Every job is then
// stopped and no agent is left.
func TestCrashDrillJobStart(t *testing.T) {
	trials := drillTrials(t)
	p := start(t)
	res := p.acquire(t, "key-jobdrill", map[string]string{"ttl": "1h"})
	host := protocol.Target{Host: protocol.HostRef{Name: "box", Handle: res.Handle, Instance: p.decl.Instance}}
	t0 := time.Now()
	probe, _ := startJob(t, p, host, "probe")
	full := time.Since(t0)
	stopJob(t, p, probe)
	t.Logf("a whole job.start took %v; killing within 0..%v", full, full+full/4)

	counts := map[string]int{}
	for i := 0; i < trials; i++ {
		key := fmt.Sprintf("jd-%d", i)
		params := jobStartParams(host, key)
		k := startOn(t, p.prefix)
		k.sendAway("job.start", params)
		time.Sleep(time.Duration(rand.Int64N(int64(full + full/4))))
		k.kill()

		q := startOn(t, p.prefix)
		jt := jobTargetOf(host, key, "")
		var lk protocol.JobLookupResult
		q.must(t, "job.lookup", map[string]any{"deadline": deadline(), "target": jt, "key": key, "fence": true}, &lk)
		want := 0
		switch {
		case lk.Found != nil:
			counts["found"]++
			want = 1
		case lk.None:
			counts["none"]++
			if err := q.call(t, "job.start", params, nil); err == nil {
				t.Errorf("%s: a job.start after a fenced none succeeded", key)
			}
		default:
			counts["other"]++
			t.Errorf("%s: job.lookup %+v", key, lk)
		}
		if n := agentsOf(t, q, res.Handle, key); (want == 0) != (n == 0) {
			t.Errorf("%s: %d processes of its job running, want them only when found (lookup %+v)", key, n, lk)
		}
		if lk.Found != nil {
			stopJob(t, q, jobTargetOf(host, key, lk.Found.Handle))
		}
		q.stop(t)
	}
	t.Logf("job.lookup answers after the kill: %v", counts)
	if left := podExec(t, p, res.Handle, "sh", "-c", "ps -eo args | grep -c '[m]u-test-agent' || true"); strings.TrimSpace(left) != "0" {
		t.Errorf("%s agents left after every job was stopped", strings.TrimSpace(left))
	}
}

func jobStartParams(host protocol.Target, key string) protocol.JobStartParams {
	return protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: key,
		Spec: protocol.JobSpec{Workstream: "ws", Name: key, Harness: "mu-test-agent", Role: "full-access",
			Cmd: string(agent.Script), CommandSource: "test", Cwd: ".", Env: map[string]string{"MU_DRILL_KEY": key}}}
}

func jobTargetOf(host protocol.Target, key, handle string) protocol.Target {
	jt := host
	jt.Job = &protocol.JobRef{Kind: "k8s", Key: key, Handle: handle}
	jt.Agent = &protocol.AgentRef{Workstream: "ws", Name: key, Incarnation: 1}
	return jt
}

func stopJob(t *testing.T, p *plugin, jt protocol.Target) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.JobStop(ctx, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: jt.Job.Key}); err != nil {
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

// TestCrashDrillChannelSend SIGKILLs the plugin at random points of
// channel.send to a running agent, then resolves the delivery as mu's
// replay does (receipt "exact": channel.receipt): an accepted delivery is
// exactly one turn, a not-accepted one none, ever (the next delivery's turn
// is the only one after it).
func TestCrashDrillChannelSend(t *testing.T) {
	trials := drillTrials(t)
	p := start(t)
	res := p.acquire(t, "key-senddrill", map[string]string{"ttl": "1h"})
	host := protocol.Target{Host: protocol.HostRef{Name: "box", Handle: res.Handle, Instance: p.decl.Instance}}
	jt, _ := startJob(t, p, host, "sendjob")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	runs := drive.Baseline(t, ctx, p.Plugin.Plugin, jt).Runs
	send := func(id string) protocol.SendParams {
		return protocol.SendParams{Base: protocol.Base{Target: jt}, Text: "drill " + id, MsgID: id, Mode: protocol.ModeFollowUp}
	}
	// A whole send as a trial's fresh plugin makes it (its first call: the
	// API server's reach, the pod, a new exec channel).
	fresh := startOn(t, p.prefix)
	t0 := time.Now()
	if _, err := fresh.ChannelSend(ctx, send("probe")); err != nil {
		t.Fatalf("channel.send: %v", err)
	}
	full := time.Since(t0)
	fresh.stop(t)
	runs = drive.Settled(t, ctx, p.Plugin.Plugin, jt, runs).Runs
	t.Logf("a fresh plugin's whole channel.send took %v; killing within 0..%v", full, full+full/4)

	counts := map[string]int{}
	for i := 0; i < trials; i++ {
		id := fmt.Sprintf("msg-%d", i)
		k := startOn(t, p.prefix)
		k.sendAway("channel.send", send(id))
		time.Sleep(time.Duration(rand.Int64N(int64(full + full/4))))
		k.kill()

		q := startOn(t, p.prefix)
		rc, err := q.Receipt(ctx, protocol.ReceiptParams{Base: protocol.Base{Target: jt}, MsgID: id})
		if err != nil {
			t.Fatalf("%s: channel.receipt: %v", id, err)
		}
		counts[rc.State]++
		switch rc.State {
		case protocol.ReceiptAccepted:
			if obs := drive.Settled(t, ctx, q.Plugin.Plugin, jt, runs); obs.Runs != runs+1 {
				t.Errorf("%s accepted: runs %d after %d, want exactly one turn", id, obs.Runs, runs)
			}
			runs++
		case protocol.ReceiptNotAccepted:
		default:
			t.Fatalf("%s: receipt %+v", id, rc)
		}
		// The next delivery's turn is the only one past runs: a killed
		// send that was not accepted never lands later.
		next := id + "-next"
		if _, err := q.ChannelSend(ctx, send(next)); err != nil {
			t.Fatalf("%s: channel.send: %v", next, err)
		}
		if obs := drive.Settled(t, ctx, q.Plugin.Plugin, jt, runs); obs.Runs != runs+1 {
			t.Errorf("%s (%s): runs %d after %d, want one turn", next, rc.State, obs.Runs, runs)
		}
		runs++
		if again, err := q.Receipt(ctx, protocol.ReceiptParams{Base: protocol.Base{Target: jt}, MsgID: id}); err != nil || again.State != rc.State {
			t.Errorf("%s: receipt changed from %s to %+v %v", id, rc.State, again, err)
		}
		q.stop(t)
	}
	t.Logf("receipts after the kill: %v", counts)
}
