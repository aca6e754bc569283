package ssh

import (
	"context"
	"path"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/backend/tmuxjob"
	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil"
	"github.com/mu-org/mu-plugins/protocol"
)

// shRunner runs every "/bin/sh" argv with another POSIX shell: a host
// whose /bin/sh is that shell, for tmuxjob's scripts.
type shRunner struct {
	tmuxjob.Runner
	sh string
}

func (r shRunner) Run(ctx context.Context, argv []string, stdin []byte) ([]byte, []byte, int, error) {
	if len(argv) > 0 && argv[0] == "/bin/sh" {
		argv = append([]string{r.sh}, argv[1:]...)
	}
	return r.Runner.Run(ctx, argv, stdin)
}

// Jobs for a plain user whose shell is busybox ash (every tmuxjob script
// and the kill-safe wrapper run by it), and for a root login: start,
// readiness, a delivery and its settled turn, the check steps, stop.
func TestJobsShellsAndUsers(t *testing.T) {
	t.Run("busybox-ash", func(t *testing.T) {
		bb := busyboxSh(t)
		setShell(t, bb)
		h := newJobHost(t, testsshd.Options{})
		jobRoundTrip(t, h, func(r tmuxjob.Runner) tmuxjob.Runner { return shRunner{r, bb} })
	})
	t.Run("root", func(t *testing.T) {
		h := newJobHost(t, testsshd.Options{Root: true, Alias: "rootbox"})
		jobRoundTrip(t, h, func(r tmuxjob.Runner) tmuxjob.Runner { return r })
	})
}

func jobRoundTrip(t *testing.T, h *jobHost, wrap func(tmuxjob.Runner) tmuxjob.Runner) {
	ctx := testutil.Context(t, 3*time.Minute)
	b := New(Config{SSHConfig: h.s.Config}, nil)
	defer b.Close()
	j, err := tmuxjob.New(wrap(b.Runner(h.s.Alias)), tmuxjob.Options{Root: path.Join(h.s.Home, h.root), Kind: JobKind, Channel: ChannelName})
	if err != nil {
		t.Fatal(err)
	}
	steps, err := j.CheckSteps(ctx, protocol.PhaseAgent)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s.OK != protocol.StepPassed {
			t.Fatalf("check step %+v", s)
		}
	}
	key := newKey("sh")
	base := protocol.Base{Target: h.jobTarget(key, "", "a")}
	if _, err := j.Start(ctx, protocol.JobStartParams{Base: base, Key: key, Spec: h.spec("a", ".", map[string]string{"Q": "it's $(x)"})}); err != nil {
		t.Fatalf("start: %v", err)
	}
	testutil.Eventually(t, "baseline", func() bool {
		bl, err := j.Baseline(ctx, key)
		return err == nil && bl != nil
	})
	if _, err := j.Send(ctx, protocol.SendParams{Base: base, Text: "hi 'there'", MsgID: "m1", Mode: protocol.ModeFollowUp}); err != nil {
		t.Fatalf("send: %v", err)
	}
	var o *protocol.Observation
	testutil.Eventually(t, "the settled turn", func() bool {
		o, err = j.LastRun(ctx, protocol.LastRunParams{Base: base, AfterRuns: 0})
		return err == nil && o != nil
	})
	if o.Runs != 1 || o.LastText != "agent: hi 'there'" {
		t.Fatalf("lastRun: %+v", o)
	}
	if err := j.Stop(ctx, key); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if st, err := j.Status(ctx, key); err != nil || st.State != protocol.JobEnded {
		t.Fatalf("status after stop: %+v %v", st, err)
	}
}
