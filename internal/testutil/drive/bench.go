package drive

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// StartToBaseline is a job kind's start-to-baseline benchmark: each op is
// job.start (start(i) gives its params and the job's target once started)
// then channel.baseline until it is not null (spawn readiness); the job is
// stopped outside the timer. It reports baseline-calls/op.
func StartToBaseline(b *testing.B, ctx context.Context, p *caller.Plugin,
	start func(i int) protocol.JobStartParams, target func(key, handle string, i int) protocol.Target) {
	polls := 0
	for i := 0; b.Loop(); i++ {
		sp := start(i)
		res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, sp)
		if err != nil {
			b.Fatal(err)
		}
		jt := target(sp.Key, res.Handle, i)
		for {
			polls++
			bl, err := caller.Invoke(ctx, p, protocol.MethodChannelBaseline, protocol.Base{Target: jt})
			if err != nil {
				b.Fatal(err)
			}
			if bl != nil {
				break
			}
		}
		b.StopTimer()
		if _, err := caller.Invoke(ctx, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: sp.Key}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(polls)/float64(b.N), "baseline-calls/op")
}

// SendToSettled is a job kind's send-to-settled benchmark on the running
// job jt, whose agent works work a turn (and settles at its record's
// since, on this machine's clock): each op is channel.send then its
// watch/settled. overhead-ms/turn is what is not the agent's work; it
// splits into send-ms (channel.send's call), agent-beyond-work-ms (the
// send's answer to the turn's record) and settle-to-notify-ms (the record
// to watch/settled).
func SendToSettled(b *testing.B, ctx context.Context, p *caller.Plugin, jt protocol.Target, work time.Duration) {
	var runs int64
	var deliver, agentT, notify time.Duration
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if _, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: fmt.Sprintf("turn %d", i),
			MsgID: fmt.Sprintf("m%d", i), Mode: protocol.ModeFollowUp}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		o := Settled(b, ctx, p, jt, runs)
		t2 := time.Now()
		if o.Runs != runs+1 {
			b.Fatalf("settled at %d, want %d", o.Runs, runs+1)
		}
		at := time.UnixMilli(o.Since)
		deliver += t1.Sub(t0)
		agentT += at.Sub(t1)
		notify += t2.Sub(at)
		runs++
	}
	per := time.Since(start) / time.Duration(runs)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(runs) }
	b.ReportMetric(float64((per-work).Microseconds())/1000, "overhead-ms/turn")
	b.ReportMetric(ms(deliver), "send-ms/turn")
	b.ReportMetric(ms(agentT)-float64(work.Milliseconds()), "agent-beyond-work-ms/turn")
	b.ReportMetric(ms(notify), "settle-to-notify-ms/turn")
}
