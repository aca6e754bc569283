package docker_test

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/protocol"
)

// Run side by side: go test ./backend/docker -run '^$' -bench . -benchtime 20x

// BenchmarkAcquire compares host.acquire (create, start, readiness exec) with
// `docker run -d IMAGE sleep infinity` plus one `docker exec CTR true`.
// Removal is outside the timer in both.
func BenchmarkAcquire(b *testing.B) {
	image := testimage.Ensure(b)
	sandboxtest.BenchAcquire(b, start(b).Plugin)
	b.Run("docker-cli", func(b *testing.B) {
		for b.Loop() {
			id := cliHost(b, image)
			b.StopTimer()
			_ = exec.Command("docker", "rm", "-f", id).Run()
			b.StartTimer()
		}
	})
}

// BenchmarkExecTrue compares link.exec of `true` (over the plugin's pooled
// exec channel) with `docker exec CTR true`, on one container.
// cliHost is the docker CLI's way to the same host as an acquire: a
// container of image started, and one command run in it; its id.
func cliHost(b *testing.B, image string) string {
	out, err := exec.Command("docker", "run", "-d", "--label", "org.mu-plugins.test=1",
		"--label", "org.mu-plugins.testrun="+runID, image, "sleep", "infinity").Output()
	if err != nil {
		b.Fatal(err)
	}
	id := string(out[:len(out)-1])
	if err := exec.Command("docker", "exec", id, "true").Run(); err != nil {
		b.Fatal(err)
	}
	return id
}

func BenchmarkExecTrue(b *testing.B) {
	p := start(b)
	h := p.Acquire(b, "bench-exec", nil).Handle
	sandboxtest.BenchExecTrue(b, p.Plugin, h, "docker-cli", func(b *testing.B) {
		if err := exec.Command("docker", "exec", h, "true").Run(); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkAcquireInterleaved alternates the two, one of each per
// iteration, so that load from elsewhere on the machine hits both alike; it
// reports each one's mean and their ratio.
func BenchmarkAcquireInterleaved(b *testing.B) {
	image := testimage.Ensure(b)
	p := start(b)
	var plugin, cli time.Duration
	n := 0
	for i := 0; b.Loop(); i++ {
		key := fmt.Sprintf("bench-acqi-%d", i)
		t0 := time.Now()
		p.Acquire(b, key, nil)
		plugin += time.Since(t0)

		t0 = time.Now()
		id := cliHost(b, image)
		cli += time.Since(t0)
		n++

		b.StopTimer()
		sandboxtest.Must(b, p, protocol.MethodHostRelease, sandboxtest.KeyParams(key))
		_ = exec.Command("docker", "rm", "-f", id).Run()
		b.StartTimer()
	}
	b.ReportMetric(float64(plugin.Milliseconds())/float64(n), "plugin-ms/op")
	b.ReportMetric(float64(cli.Milliseconds())/float64(n), "cli-ms/op")
	b.ReportMetric(float64(plugin)/float64(cli), "ratio")
}

// BenchmarkExecTrueInterleaved does the same for link.exec of `true`.
func BenchmarkExecTrueInterleaved(b *testing.B) {
	p := start(b)
	h := p.Acquire(b, "bench-exec-i", nil).Handle
	var plugin, cli time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		if r := p.Run(b, h, "true"); sandboxtest.ExitCode(r) != "0" {
			b.Fatalf("exec: %+v", r)
		}
		plugin += time.Since(t0)
		t0 = time.Now()
		if err := exec.Command("docker", "exec", h, "true").Run(); err != nil {
			b.Fatal(err)
		}
		cli += time.Since(t0)
		n++
	}
	b.ReportMetric(float64(plugin.Microseconds())/1000/float64(n), "plugin-ms/op")
	b.ReportMetric(float64(cli.Microseconds())/1000/float64(n), "cli-ms/op")
	b.ReportMetric(float64(plugin)/float64(cli), "ratio")
}
