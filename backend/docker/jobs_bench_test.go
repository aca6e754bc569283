package docker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/protocol"
)

// BenchmarkStartToBaseline: job.start of the test agent to the first
// non-null channel.baseline (spawn readiness), through the plugin as mu
// drives it (each call one request on the running plugin).
func BenchmarkStartToBaseline(b *testing.B) {
	ctx := testutil.Context(b, 20*time.Minute)
	p, host := spawnPlugin(b, ctx)
	polls := 0
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("b%d", i)
		key := "bench-" + name + "-" + newPrefix()
		res, err := p.JobStart(ctx, protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: key, Spec: jobSpec(name, ".", nil)})
		if err != nil {
			b.Fatal(err)
		}
		jt := drive.JobTarget(host, "docker", key, res.Handle, "ws", name)
		for {
			polls++
			bl, err := p.Baseline(ctx, jt)
			if err != nil {
				b.Fatal(err)
			}
			if bl != nil {
				break
			}
		}
		b.StopTimer()
		if err := p.JobStop(ctx, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: key}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(polls)/float64(b.N), "baseline-calls/op")
}

// BenchmarkSendToSettled: channel.send to its watch/settled, on a test
// agent whose turns work 100 ms; overhead-ms/turn is what is not the
// agent's 100 ms. It splits into send-ms (channel.send's call),
// agent-beyond-work-ms (from the send's answer to the turn's record: the
// nudge, the agent's take and its own shell bookkeeping around the 100 ms)
// and settle-to-notify-ms (the record to watch/settled: the watch's call
// and its looks on the host, every 100 ms).
func BenchmarkSendToSettled(b *testing.B) {
	const work = 100 * time.Millisecond
	ctx := testutil.Context(b, 20*time.Minute)
	p, host := spawnPlugin(b, ctx)
	jt := startAgent(b, ctx, p, host, "bs", map[string]string{"MU_TEST_AGENT_MS": fmt.Sprint(work.Milliseconds())})
	var runs int64
	var deliver, agentT, notify time.Duration
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if _, err := p.ChannelSend(ctx, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: fmt.Sprintf("turn %d", i),
			MsgID: fmt.Sprintf("m%d", i), Mode: protocol.ModeFollowUp}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		o := drive.Settled(b, ctx, p, jt, runs)
		t2 := time.Now()
		if o.Runs != runs+1 {
			b.Fatalf("settled at %d, want %d", o.Runs, runs+1)
		}
		// The turn's record says when the agent settled it (the container
		// shares this machine's clock).
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

// BenchmarkRunnerRoundTrip: one tmuxjob Runner run (`true`) over a pooled
// exec channel, against a one-off API exec of the same.
func BenchmarkRunnerRoundTrip(b *testing.B) {
	ctr := runContainer(b)
	ctx := testutil.Context(b, 10*time.Minute)
	r := inProcess(b).Runner(ctr)
	b.Run("pooled", func(b *testing.B) {
		for b.Loop() {
			if _, _, code, err := r.Run(ctx, []string{"true"}, nil); err != nil || code != 0 {
				b.Fatal(code, err)
			}
		}
	})
	b.Run("tmuxjob-status-script", func(b *testing.B) {
		for b.Loop() {
			if _, _, code, err := r.Run(ctx, []string{"/bin/sh", "-c", `unset MU_DOCKER_RUN; tmux -S /tmp/none has-session 2>/dev/null; exit 0`}, []byte("x")); err != nil || code != 0 {
				b.Fatal(code, err)
			}
		}
	})
}
