package docker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
)

// BenchmarkStartToBaseline: job.start of the test agent to the first
// non-null channel.baseline (spawn readiness), through the plugin as mu
// drives it (each call one request on the running plugin).
func BenchmarkStartToBaseline(b *testing.B) {
	ctx := waitfor.Context(b, 20*time.Minute)
	p, host := spawnPlugin(b, ctx)
	prefix := sandboxtest.NewPrefix()
	drive.StartToBaseline(b, ctx, p, func(i int) protocol.JobStartParams {
		name := fmt.Sprintf("b%d", i)
		return protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: "bench-" + name + "-" + prefix, Spec: jobSpec(name, ".", nil)}
	}, func(key, handle string, i int) protocol.Target {
		return drive.JobTarget(host, "docker", key, handle, "ws", fmt.Sprintf("b%d", i))
	})
}

// BenchmarkSendToSettled: channel.send to its watch/settled, on a test
// agent whose turns work 100 ms (drive.SendToSettled: the overhead beyond
// the agent's work, and its parts).
func BenchmarkSendToSettled(b *testing.B) {
	const work = 100 * time.Millisecond
	ctx := waitfor.Context(b, 20*time.Minute)
	p, host := spawnPlugin(b, ctx)
	jt := startAgent(b, ctx, p, host, "bs", map[string]string{"MU_TEST_AGENT_MS": fmt.Sprint(work.Milliseconds())})
	drive.SendToSettled(b, ctx, p, jt, work)
}

// BenchmarkRunnerRoundTrip: one tmuxjob Runner run (`true`) over a pooled
// exec channel, against a one-off API exec of the same.
func BenchmarkRunnerRoundTrip(b *testing.B) {
	ctr := runContainer(b)
	ctx := waitfor.Context(b, 10*time.Minute)
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
			if _, _, code, err := r.Run(ctx, []string{"/bin/sh", "-c", `unset MU_EXEC_RUN; tmux -S /tmp/none has-session 2>/dev/null; exit 0`}, []byte("x")); err != nil || code != 0 {
				b.Fatal(code, err)
			}
		}
	})
}
