package tmuxjob_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/backend/tmuxjob"
	"github.com/mu-org/mu-plugins/internal/testutil"
	"github.com/mu-org/mu-plugins/protocol"
)

// BenchmarkStartToBaseline: job.start of the test agent, then
// channel.baseline polled until the harness reports (mu's readiness).
func BenchmarkStartToBaseline(b *testing.B) {
	benchStartToBaseline(b, newHost(b, func(o *tmuxjob.Options) { o.Poll = 10 * time.Millisecond }))
}

// benchStartToBaseline times, on h, job.start of the test agent and
// channel.baseline polled until the harness reports; the stop is not timed.
func benchStartToBaseline(b *testing.B, h *host) {
	ctx := testutil.Context(b, 2*time.Minute)
	for i := 0; b.Loop(); i++ {
		key := fmt.Sprintf("bs-%d", i)
		if _, err := h.jobs.Start(ctx, protocol.JobStartParams{Base: base(key), Key: key, Spec: spec("exec sh " + shq(h.agent))}); err != nil {
			b.Fatal(err)
		}
		for {
			bl, err := h.jobs.Baseline(ctx, key)
			if err != nil {
				b.Fatal(err)
			}
			if bl != nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		b.StopTimer()
		if err := h.jobs.Stop(ctx, key); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkSendToSettled: channel.send, then the watch's wait until the
// turn settles, for a turn whose own work is workMs; overhead-ms is the
// time per turn beyond that work.
func BenchmarkSendToSettled(b *testing.B) {
	for _, workMs := range []int{0, 100} {
		b.Run(fmt.Sprintf("work=%dms", workMs), func(b *testing.B) {
			h := newHost(b, func(o *tmuxjob.Options) { o.Poll = 10 * time.Millisecond })
			ctx := testutil.Context(b, 2*time.Minute)
			key := "bt"
			h.startAgent(b, key, nil, "")
			var runs int64
			var lag, toSettle time.Duration
			start := time.Now()
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				after := runs
				res, wait, err := h.jobs.Watch(ctx, protocol.WatchParams{Base: base(key), AfterRuns: &after})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := h.jobs.Send(ctx, protocol.SendParams{Base: base(key), MsgID: fmt.Sprintf("m%d", i),
					Text: fmt.Sprintf("turn %d [[ms:%d]]", i, workMs), Mode: protocol.ModeFollowUp}); err != nil {
					b.Fatal(err)
				}
				method, n := wait(ctx)
				if method != protocol.NotifyWatchSettled {
					b.Fatalf("watch %s ended with %q", res.WatchID, method)
				}
				settled := time.UnixMilli(n.(protocol.WatchSettled).Observation.Since)
				lag += time.Since(settled)
				toSettle += settled.Sub(t0)
				runs++
			}
			per := time.Since(start) / time.Duration(runs)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			work := time.Duration(workMs) * time.Millisecond
			b.ReportMetric(ms(per-work), "overhead-ms/turn")
			// Of which: from the watch and send to the harness's settle (the
			// delivery, the nudge, the harness's own steps), and from the
			// settle to the watch's notification (its polling).
			b.ReportMetric(ms(toSettle/time.Duration(runs)-work), "to-settle-ms/turn")
			b.ReportMetric(ms(lag/time.Duration(runs)), "watch-lag-ms/turn")
		})
	}
}

// BenchmarkReadStates: one channel read, one Runner round trip.
func BenchmarkReadStates(b *testing.B) {
	h := newHost(b)
	ctx := testutil.Context(b, 2*time.Minute)
	key := "br"
	h.startAgent(b, key, nil, "")
	p := protocol.ReadStatesParams{Base: base(key), Targets: []protocol.AgentName{{Workstream: "ws", Name: "a1"}}}
	for b.Loop() {
		if _, err := h.jobs.ReadStates(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReceipt: one channel.receipt, under the job's lock: of a
// delivery accepted, and of a msgId never sent (which writes its fence).
func BenchmarkReceipt(b *testing.B) {
	h := newHost(b)
	ctx := testutil.Context(b, 2*time.Minute)
	key := "bx"
	h.startAgent(b, key, nil, "")
	h.send(b, key, "m1", "one")
	b.Run("accepted", func(b *testing.B) {
		for b.Loop() {
			if r, err := h.jobs.Receipt(ctx, protocol.ReceiptParams{Base: base(key), MsgID: "m1"}); err != nil || r.State != protocol.ReceiptAccepted {
				b.Fatal(r, err)
			}
		}
	})
	b.Run("not-accepted", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if r, err := h.jobs.Receipt(ctx, protocol.ReceiptParams{Base: base(key), MsgID: "n" + strconv.Itoa(i)}); err != nil || r.State != protocol.ReceiptNotAccepted {
				b.Fatal(r, err)
			}
		}
	})
}
