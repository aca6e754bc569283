package tmuxjob_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/testlog"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
)

// The whole job and channel in the project's test image, as the docker
// backend will run them: every tool the scripts need is in the image, and a
// container restart reads lost.
func TestInTheTestImage(t *testing.T) {
	image := testimage.Ensure(t)
	ctx := waitfor.Context(t, 2*time.Minute)
	out, err := exec.CommandContext(ctx, "docker", "run", "-d", "--init", "--label", testimage.Label+"=1", image).CombinedOutput()
	if err != nil {
		t.Fatalf("docker run: %v %s", err, out)
	}
	ctr := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", ctr).Run() })
	r := testimage.Exec{Container: ctr}
	j, err := tmuxjob.New(r, tmuxjob.Options{Root: "/home/mu/.mu-jobs", Kind: "tmux", Channel: "tmux-test", Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Install(ctx, r, "/home/mu/bin/mu-test-agent"); err != nil {
		t.Fatal(err)
	}
	steps, err := j.CheckSteps(ctx, protocol.PhaseReach)
	for _, s := range steps {
		if err != nil || s.OK != protocol.StepPassed {
			t.Fatalf("the test image lacks what jobs need: %+v %v", steps, err)
		}
	}
	h := &host{jobs: j, agent: "/home/mu/bin/mu-test-agent", r: r}
	key := "ctr-job"
	h.startAgent(t, key, map[string]string{"MU_TEST_AGENT_MS": "100"}, "/home/mu")
	if st, _ := j.Status(ctx, key); st.State != protocol.JobRunning {
		t.Fatalf("status: %+v", st)
	}
	text := "hostile: '\" $(id) `id`\n\x01\x1b[2J end"
	if s := h.send(t, key, "m1", text); *s.Baseline != 0 || s.Ack != protocol.AckConfirmed {
		t.Fatalf("send: %+v", s)
	}
	if o := h.lastRun(t, key, 0); o.LastText != "agent: "+text {
		t.Fatalf("turn 1: %+v", o)
	}
	h.send(t, key, "m2", "ask [[block:ok]]")
	waitfor.Eventually(t, "blocked", func() bool { return h.reading(t, key).State == protocol.TurnBlocked })
	if _, err := j.Answer(ctx, protocol.AnswerParams{Base: base(key), Keys: []string{"y"}}); err != nil {
		t.Fatal(err)
	}
	h.lastRun(t, key, 1)
	h.send(t, key, "m3", "long [[ms:600000]]")
	waitfor.Eventually(t, "busy", func() bool { return h.reading(t, key).State == protocol.TurnBusy })
	if ir, err := j.Interrupt(ctx, protocol.InterruptParams{Base: base(key), Text: "now this", MsgID: "i1", TimeoutMs: 30000}); err != nil || !ir.WasBusy || ir.Pending {
		t.Fatalf("interrupt: %+v %v", ir, err)
	}
	if o := h.lastRun(t, key, 3); o.LastText != "agent: now this" {
		t.Fatalf("turn 4: %+v", o)
	}

	// The view's follow side over the exec shows the agent.
	var buf testlog.LockedBuffer
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	go func() { _ = j.Follow(fctx, handleOf(t, j, key), &buf) }()
	waitfor.Eventually(t, "follow shows the agent", func() bool { return strings.Contains(buf.String(), "agent: now this") })
	cancel()

	// A container restart: the tmux server is gone, the job with it.
	if out, err := exec.CommandContext(ctx, "docker", "restart", "-t", "1", ctr).CombinedOutput(); err != nil {
		t.Fatalf("docker restart: %v %s", err, out)
	}
	st, err := j.Status(ctx, key)
	if err != nil || st.State != protocol.JobLost {
		t.Fatalf("status after a restart: %+v %v", st, err)
	}
	if err := j.Stop(ctx, key); err != nil {
		t.Fatalf("stop of a lost job: %v", err)
	}
	// A container that is gone: unknown, never a death.
	if out, err := exec.CommandContext(ctx, "docker", "stop", "-t", "1", ctr).CombinedOutput(); err != nil {
		t.Fatalf("docker stop: %v %s", err, out)
	}
	if st, _ := j.Status(ctx, key); st.State != protocol.JobUnknown {
		t.Fatalf("status with the container stopped: %+v", st)
	}
}

// testContainer runs the test image and returns a Jobs on it over
// `docker exec -i`, with the test agent installed.
func testContainer(tb testing.TB, mod ...func(*tmuxjob.Options)) (*host, string) {
	tb.Helper()
	image := testimage.Ensure(tb)
	ctx := waitfor.Context(tb, 2*time.Minute)
	out, err := exec.CommandContext(ctx, "docker", "run", "-d", "--init", "--label", testimage.Label+"=1", image).CombinedOutput()
	if err != nil {
		tb.Fatalf("docker run: %v %s", err, out)
	}
	ctr := strings.TrimSpace(string(out))
	tb.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", ctr).Run() })
	r := testimage.Exec{Container: ctr}
	o := tmuxjob.Options{Root: "/home/mu/.mu-jobs", Kind: "tmux", Channel: "tmux-test", Poll: 20 * time.Millisecond}
	for _, m := range mod {
		m(&o)
	}
	j, err := tmuxjob.New(r, o)
	if err != nil {
		tb.Fatal(err)
	}
	if err := agent.Install(ctx, r, "/home/mu/bin/mu-test-agent"); err != nil {
		tb.Fatal(err)
	}
	return &host{jobs: j, agent: "/home/mu/bin/mu-test-agent", r: r}, ctr
}

// BenchmarkInTheTestImage: start-to-baseline and send-to-settled in a
// container, every host call one `docker exec` through the CLI (the docker
// backend's API exec is cheaper).
func BenchmarkInTheTestImage(b *testing.B) {
	b.Run("start-to-baseline", func(b *testing.B) {
		h, _ := testContainer(b)
		benchStartToBaseline(b, h, "exec sh "+words.ShQuote(h.agent), false)
	})
	b.Run("send-to-settled/work=100ms", func(b *testing.B) {
		h, _ := testContainer(b)
		ctx := waitfor.Context(b, 2*time.Minute)
		h.startAgent(b, "bt", nil, "")
		var runs int64
		start := time.Now()
		for i := 0; b.Loop(); i++ {
			after := runs
			_, wait, err := h.jobs.Watch(ctx, protocol.WatchParams{Base: base("bt"), AfterRuns: &after})
			if err != nil {
				b.Fatal(err)
			}
			h.send(b, "bt", fmt.Sprintf("m%d", i), fmt.Sprintf("turn %d [[ms:100]]", i))
			if m, _ := wait(ctx); m != protocol.NotifyWatchSettled {
				b.Fatalf("watch: %q", m)
			}
			runs++
		}
		per := time.Since(start) / time.Duration(runs)
		b.ReportMetric(float64((per-100*time.Millisecond).Microseconds())/1000, "overhead-ms/turn")
	})
}

func handleOf(t *testing.T, j *tmuxjob.Jobs, key string) string {
	lk, err := j.Lookup(waitfor.Context(t, 2*time.Minute), protocol.LookupParams{Base: base(key), Key: key})
	if err != nil || lk.Found == nil {
		t.Fatalf("lookup: %+v %v", lk, err)
	}
	return lk.Found.Handle
}

// The claude adapter in a container the plugin owns (as mu-plugin-docker
// and mu-plugin-k8s run it): a fresh home, the first-run screens answered
// before the CLI starts, a long message read with no dialog, an API error
// settled, all with nobody at the pane.
func TestClaudeTUIInTheTestImage(t *testing.T) {
	h, ctr := testContainer(t, func(o *tmuxjob.Options) { o.OwnsHome = true })
	ctx := waitfor.Context(t, 2*time.Minute)
	if err := agent.InstallDouble(ctx, h.r, "claude", "/home/mu/bin/claude"); err != nil {
		t.Fatal(err)
	}
	s := spec("/home/mu/bin/claude")
	s.Cwd, s.Env = "/home/mu", map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-secret-0123456789abcdefghij"}
	key := "ctr-claude"
	if _, err := h.jobs.Start(ctx, protocol.JobStartParams{Base: base(key), Key: key, Spec: s}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("docker", "exec", ctr, "sh", "-c", "tail -c 3000 /home/mu/.mu-jobs/jobs/*/log").CombinedOutput()
			t.Logf("the job's terminal:\n%s", out)
		}
	})
	h.waitBaseline(t, key)
	drive.ClaudeTurns(t, func(i int, text string) { h.send(t, key, fmt.Sprintf("m%d", i), text) },
		func(i int) protocol.Observation { return *h.lastRun(t, key, int64(i)) })
}
