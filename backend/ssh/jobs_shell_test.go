package ssh

import (
	"path"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// Jobs for a plain user on a host whose /bin/sh is busybox ash (the
// kill-safe wrapper, every tmuxjob script, the job's wrapper in its tmux
// pane, the harness and the test agent all run by it), and for a root
// login: start, readiness, a delivery and its settled turn, the check
// steps, stop.
func TestJobsShellsAndUsers(t *testing.T) {
	t.Run("busybox-ash", func(t *testing.T) {
		h := newJobHost(t, testsshd.Options{BusyboxSh: true})
		ctx := waitfor.Context(t, time.Minute)
		b := New(Config{SSHConfig: h.s.Config}, nil)
		defer b.Close()
		out, _, _, err := b.Runner(h.s.Alias).Run(ctx, []string{"/bin/sh", "-c", "/bin/sh --help 2>&1; sh --help 2>&1"}, nil)
		if err != nil || strings.Count(string(out), "BusyBox v") != 2 {
			t.Fatalf("the host's /bin/sh and sh are not busybox: %q %v", out, err)
		}
		jobRoundTrip(t, h)
	})
	t.Run("root", func(t *testing.T) {
		h := newJobHost(t, testsshd.Options{Root: true, Alias: "rootbox"})
		jobRoundTrip(t, h)
	})
}

func jobRoundTrip(t *testing.T, h *jobHost) {
	ctx := waitfor.Context(t, 3*time.Minute)
	b := New(Config{SSHConfig: h.s.Config}, nil)
	defer b.Close()
	j, err := tmuxjob.New(b.Runner(h.s.Alias), tmuxjob.Options{Root: path.Join(h.s.Home, h.root), Kind: JobKind, Channel: ChannelName})
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
	waitfor.Eventually(t, "baseline", func() bool {
		bl, err := j.Baseline(ctx, key)
		return err == nil && bl != nil
	})
	zero := int64(0)
	_, wait, err := j.Watch(ctx, protocol.WatchParams{Base: base, AfterRuns: &zero})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	if _, err := j.Send(ctx, protocol.SendParams{Base: base, Text: "hi 'there'", MsgID: "m1", Mode: protocol.ModeFollowUp}); err != nil {
		t.Fatalf("send: %v", err)
	}
	method, note := wait(ctx)
	if ws, ok := note.(protocol.WatchSettled); method != protocol.NotifyWatchSettled || !ok || ws.Observation.LastText != "agent: hi 'there'" {
		t.Fatalf("watch: %s %+v", method, note)
	}
	var o *protocol.Observation
	waitfor.Eventually(t, "the settled turn", func() bool {
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
