package ssh

import (
	"fmt"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The job kind's benchmarks beside the docker kind's
// (backend/docker/jobs_bench_test.go): the same loops (drive), on a real
// sshd on 127.0.0.1.

// BenchmarkJobStartToBaseline: job.start of the test agent to the first
// non-null channel.baseline (spawn readiness).
func BenchmarkJobStartToBaseline(b *testing.B) {
	ctx := waitfor.Context(b, 20*time.Minute)
	h := newJobHost(b, testsshd.Options{})
	p := h.start(b)
	prefix := newKey("bench")
	drive.StartToBaseline(b, ctx, p, func(i int) protocol.JobStartParams {
		return protocol.JobStartParams{Base: protocol.Base{Target: h.host()}, Key: fmt.Sprintf("%s-%d", prefix, i), Spec: h.spec(fmt.Sprintf("b%d", i), ".", nil)}
	}, func(key, handle string, i int) protocol.Target {
		return h.jobTarget(key, handle, fmt.Sprintf("b%d", i))
	})
}

// BenchmarkJobSendToSettled: channel.send to its watch/settled, on a test
// agent whose turns work 100 ms: the overhead beyond the agent's work.
func BenchmarkJobSendToSettled(b *testing.B) {
	const work = 100 * time.Millisecond
	ctx := waitfor.Context(b, 20*time.Minute)
	h := newJobHost(b, testsshd.Options{})
	p := h.start(b)
	key := newKey("bench")
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: h.host()}, Key: key,
		Spec: h.spec("bs", ".", map[string]string{"MU_TEST_AGENT_MS": fmt.Sprint(work.Milliseconds())})})

	if err != nil {
		b.Fatal(err)
	}
	jt := h.jobTarget(key, res.Handle, "bs")
	drive.Baseline(b, ctx, p, jt)
	drive.SendToSettled(b, ctx, p, jt, work)
	if _, err := caller.Invoke(ctx, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: key}); err != nil {
		b.Fatal(err)
	}
}
