package ssh

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// watchLoad is how many watches TestManyWatchesDoNotStarveTheHost holds
// open on one host (issue 24: 12 starved job.status, 50 made sends take 44 s).
const watchLoad = 100

// TestManyWatchesDoNotStarveTheHost: 100 concurrent channel.watch calls on
// one host (sshd's default MaxSessions, 10) leave job.status and
// channel.send answering, and answering right; then one turn settles every
// watch. The latencies, idle and under the watches, are logged for
// docs/benchmarks.md, not asserted (the machine is noisy).
func TestManyWatchesDoNotStarveTheHost(t *testing.T) {
	ctx := waitfor.Context(t, 5*time.Minute)
	h := newJobHost(t, testsshd.Options{})
	p := h.start(t)
	watched, busy := h.startAgent(t, ctx, p, "watched"), h.startAgent(t, ctx, p, "busy")

	idleStatus, idleSend := h.probe(t, ctx, p, watched, busy, 0)
	watches := make([]*caller.Watch, watchLoad)
	var wg sync.WaitGroup
	for i := range watches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			zero := int64(0)
			w, err := p.Watch(ctx, protocol.WatchParams{Base: protocol.Base{Target: watched}, AfterRuns: &zero}, 0)
			if err != nil {
				t.Errorf("channel.watch %d: %v", i, err)
				return
			}
			watches[i] = w
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	loadStatus, loadSend := h.probe(t, ctx, p, watched, busy, 1)
	t.Logf("job.status median: idle %v, under %d watches %v; channel.send median: idle %v, under the watches %v",
		idleStatus, watchLoad, loadStatus, idleSend, loadSend)

	if r, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: watched}, Text: "settle them", MsgID: "w-1", Mode: protocol.ModeFollowUp}); err != nil || r.Ack != protocol.AckConfirmed {
		t.Fatalf("channel.send to the watched job: %+v %v", r, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for i, w := range watches {
		n, err := w.Wait(wctx)
		if err != nil || n.Settled == nil || n.Settled.Observation.Runs != 1 {
			t.Fatalf("watch %d: %+v %v", i, n, err)
		}
	}
}

// startAgent starts the test agent as a job and returns its target once
// its harness reported.
func (h *jobHost) startAgent(t *testing.T, ctx context.Context, p *caller.Plugin, name string) protocol.Target {
	t.Helper()
	key := newKey(name)
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: h.host()}, Key: key,
		Spec: h.spec(name, h.root, map[string]string{"MU_TEST_AGENT_MS": "50"})})
	if err != nil {
		t.Fatalf("job.start %s: %v", name, err)
	}
	jt := h.jobTarget(key, res.Handle, name)
	drive.Baseline(t, ctx, p, jt)
	return jt
}

// probe asks job.status of both jobs five times and sends one message to
// busy three times (msgIds round-N): every answer must be a definite one.
// It returns the median latency of each.
func (h *jobHost) probe(t *testing.T, ctx context.Context, p *caller.Plugin, watched, busy protocol.Target, round int) (status, send time.Duration) {
	t.Helper()
	var st, se []time.Duration
	for range 5 {
		for _, jt := range []protocol.Target{watched, busy} {
			t0 := time.Now()
			s, err := caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt})
			st = append(st, time.Since(t0))
			if err != nil || s.State != protocol.JobRunning {
				t.Fatalf("job.status (round %d): %+v %v", round, s, err)
			}
		}
	}
	for i := range 3 {
		t0 := time.Now()
		r, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: busy}, Text: "hello", MsgID: fmt.Sprintf("round-%d-%d", round, i), Mode: protocol.ModeFollowUp})
		se = append(se, time.Since(t0))
		if err != nil || r.Ack != protocol.AckConfirmed {
			t.Fatalf("channel.send (round %d): %+v %v", round, r, err)
		}
	}
	return median(st), median(se)
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}
