package caller

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil"
	"github.com/mu-org/mu-plugins/protocol"
)

// buildBenchPlugin is testdata/mu-plugin-bench, built once, static.
func buildBenchPlugin(b *testing.B) string {
	b.Helper()
	return testutil.BuildShipped(b, "./testdata/mu-plugin-bench")
}

// reportPercentiles adds p50 and p99 of the samples as metrics.
func reportPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkStartHandshake: start a built plugin and run the handshake with
// every load rule (the stop is outside the timing).
func BenchmarkStartHandshake(b *testing.B) {
	cfg := Config{Name: "bench", Argv: []string{buildBenchPlugin(b)}}
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		p, err := Start(context.Background(), cfg)
		samples = append(samples, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		p.Stop()
		b.StartTimer()
	}
	b.StopTimer()
	reportPercentiles(b, samples)
}

// BenchmarkCallRoundTrip: one job.status call over the pipes, with the
// outbound schema check (once per Request) and every inbound check.
func BenchmarkCallRoundTrip(b *testing.B) {
	p, err := Start(context.Background(), Config{Name: "bench", Argv: []string{buildBenchPlugin(b)}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Stop()
	r, err := NewRequest(protocol.MethodJobStatus, protocol.Base{Target: tgt})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := p.Send(ctx, r, 0); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(t0))
	}
	b.StopTimer()
	reportPercentiles(b, samples)
}

// BenchmarkCallRoundTripRaw: the same round trip against a hand-written
// plugin that answers without a JSON-RPC library: the caller's own cost
// plus the pipes, without protocol.Serve's.
func BenchmarkCallRoundTripRaw(b *testing.B) {
	p := newHarness(b, "raw", "raw:quiet").start(b)
	r, err := NewRequest(protocol.MethodLinkExec, execParams("x"))
	if err != nil {
		b.Fatal(err)
	}
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := p.Send(context.Background(), r, 0); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(t0))
	}
	b.StopTimer()
	reportPercentiles(b, samples)
}

// BenchmarkInboundCheck: the CPU cost of judging one reply line.
func BenchmarkInboundCheck(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":2,"result":{"state":"running"}}`)
	b.ReportAllocs()
	for range b.N {
		s := newWireState()
		s.pending[2] = &pendingCall{id: 2, method: protocol.MethodJobStatus, done: make(chan outcome, 1)}
		if _, v := s.check(line); v != nil {
			b.Fatal(v)
		}
	}
}
