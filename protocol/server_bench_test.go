package protocol_test

import (
	"bufio"
	"context"
	"io"
	"sort"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// BenchmarkRoundTrip measures a no-op call over in-memory pipes through the
// whole plugin side (line channel, jrpc2, error mapping, handler) and
// reports the median and p99 besides the mean.
func BenchmarkRoundTrip(b *testing.B) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		_ = protocol.Serve(context.Background(), protocol.Options{Name: "t", Version: "1", Instance: "i", Seams: testSeams(),
			Handlers: map[string]protocol.Handler{protocol.MethodHostRelease.Name: nilHandler}, In: inR, Out: outW})
		outW.Close()
	}()
	out := bufio.NewReader(outR)
	send := func(s string) {
		if _, err := io.WriteString(inW, s); err != nil {
			b.Fatal(err)
		}
		if _, err := out.ReadString('\n'); err != nil {
			b.Fatal(err)
		}
	}
	send(initLine + "\n")
	line := `{"jsonrpc":"2.0","id":2,"method":"host.release","params":{"deadline":0,"target":{"host":{"name":"h"}},"key":"k"}}` + "\n"
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		send(line)
		lat = append(lat, time.Since(t))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	inW.Close()
}
