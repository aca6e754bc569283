package caller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/programs"
	"github.com/mu-org/mu-plugins/protocol"
)

// buildBenchPlugin is testdata/mu-plugin-bench, built once, static.
func buildBenchPlugin(b *testing.B) string {
	b.Helper()
	return programs.BuildShipped(b, "./testdata/mu-plugin-bench")
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
//
// Sub-benchmarks: the plugin as built, and the same binary with
// GOMAXPROCS=1. plugin-cpu-µs/op is the CPU time the plugin process spent
// a call (all its threads, from /proc): the part of the round trip that is
// the plugin's work rather than the wake-ups between the two processes.
func BenchmarkCallRoundTrip(b *testing.B) {
	for _, c := range []struct{ name, env string }{{"default", ""}, {"gomaxprocs=1", "GOMAXPROCS=1"}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := Config{Name: "bench", Argv: []string{buildBenchPlugin(b)}}
			if c.env != "" {
				cfg.Env = []string{c.env}
			}
			benchCallRoundTrip(b, cfg)
		})
	}
}

func benchCallRoundTrip(b *testing.B, cfg Config) {
	p, err := Start(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Stop()
	r, err := NewRequest(protocol.MethodJobStatus.Name, protocol.Base{Target: tgt})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	samples := make([]time.Duration, 0, b.N)
	cpu0 := processCPU(p.Pgid())
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
	reportPluginCPU(b, p.Pgid(), cpu0)
}

// processCPU is the CPU time so far of every thread of process pid (the
// first field of /proc/PID/task/TID/schedstat, in ns); -1 when unreadable.
func processCPU(pid int) time.Duration {
	dirs, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(dirs) == 0 {
		return -1
	}
	var sum time.Duration
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread gone meanwhile
		}
		var ns int64
		if _, err := fmt.Sscan(string(b), &ns); err == nil {
			sum += time.Duration(ns)
		}
	}
	return sum
}

// reportPluginCPU adds the plugin's CPU time a call as a metric. Threads
// that exited during the run are not counted (the runtime keeps its Ms).
func reportPluginCPU(b *testing.B, pid int, cpu0 time.Duration) {
	if cpu1 := processCPU(pid); cpu0 >= 0 && cpu1 >= cpu0 && b.N > 0 {
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "plugin-cpu-µs/op")
	}
}

// BenchmarkCallRoundTripRaw: the same round trip against a hand-written
// plugin that answers without a JSON-RPC library: the caller's own cost
// plus the pipes, without protocol.Serve's.
func BenchmarkCallRoundTripRaw(b *testing.B) {
	p := newHarness(b, "raw", "raw:quiet").start(b)
	r, err := NewRequest(protocol.MethodLinkExec.Name, execParams("x"))
	if err != nil {
		b.Fatal(err)
	}
	samples := make([]time.Duration, 0, b.N)
	cpu0 := processCPU(p.Pgid())
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
	reportPluginCPU(b, p.Pgid(), cpu0)
}

// BenchmarkInboundCheck: the CPU cost of judging one reply line.
func BenchmarkInboundCheck(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":2,"result":{"state":"running"}}`)
	b.ReportAllocs()
	for range b.N {
		s := newWireState()
		s.pending[2] = &pendingCall{id: 2, method: protocol.MethodJobStatus.Name, done: make(chan outcome, 1)}
		if _, v := s.check(line); v != nil {
			b.Fatal(v)
		}
	}
}
