package ssh

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/panes"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// A job on an SSH host through the caller side, as mu drives it: the
// declaration, job.start of the test agent in a worktree made with
// link.exec, the view in a local tmux pane with stdin from /dev/null,
// readiness, a send and its settled watch, lastRun, the view killed and
// re-attached, a second plugin process reading what the first wrote,
// job.stop, and the view saying the job ended.
func TestJobOnSSHHost(t *testing.T) {
	ctx := waitfor.Context(t, 5*time.Minute)
	h := newJobHost(t, testsshd.Options{})
	p := h.start(t)
	decl := p.Declaration().Seams
	if decl.Job == nil || decl.Job.Kind != JobKind || decl.Job.View != protocol.ViewDetached || !decl.Job.Start.Lookup ||
		!decl.Job.Start.FenceKey || decl.Channel == nil || decl.Channel.Name != "ssh" || decl.Link == nil {
		t.Fatalf("declaration: %+v", decl)
	}
	if r, err := p.Exec(ctx, h.host(), "rm -rf "+h.root+"/tree && mkdir -p "+h.root+"/tree", ".", time.Minute); err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("link.exec: %+v %v", r, err)
	}

	key, name := newKey("job"), "spawned"
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: h.host()}, Key: key,
		Spec: h.spec(name, h.root+"/tree", map[string]string{"MU_TEST_AGENT_MS": "200", "GREETING": "it's \"quoted\" $(not run)"})})

	if err != nil {
		t.Fatalf("job.start: %v", err)
	}
	if !strings.HasPrefix(res.Handle, "mu-") || !strings.Contains(res.View.Command, "'view'") || !strings.Contains(res.View.Command, "'--config'") {
		t.Fatalf("job.start: %+v", res)
	}
	jt := h.jobTarget(key, res.Handle, name)
	again, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: h.host()}, Key: key, Spec: h.spec(name, h.root+"/tree", nil)})
	if err != nil || again.Handle != res.Handle {
		t.Fatalf("a second job.start with the key: %+v %v", again, err)
	}

	tm := panes.NewPanes(t)
	tm.Open(t, "view1", res.View.Command, res.View.Env)
	tm.Shows(t, "view1", "mu test agent: ready")

	if b := drive.Baseline(t, ctx, p, jt); b.Runs != 0 || b.Incarnation == "" {
		t.Fatalf("baseline: %+v", b)
	}
	if st, err := caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt}); err != nil || st.State != protocol.JobRunning {
		t.Fatalf("job.status: %+v %v", st, err)
	}
	text := "hello over ssh\nwith 'quotes' and $(not run)"
	sr, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: text, MsgID: "msg-1", Mode: protocol.ModeFollowUp})
	if err != nil || sr.Ack != protocol.AckConfirmed || sr.Baseline == nil || *sr.Baseline != 0 {
		t.Fatalf("channel.send: %+v %v", sr, err)
	}
	if o := drive.Settled(t, ctx, p, jt, 0); o.Runs != 1 || o.LastText != "agent: "+text {
		t.Fatalf("the settled turn: %+v", o)
	}
	lr, err := caller.Invoke(ctx, p, protocol.MethodChannelLastRun, protocol.LastRunParams{Base: protocol.Base{Target: jt}, AfterRuns: 0})
	if err != nil || lr == nil || lr.Runs != 1 || lr.LastText != "agent: "+text {
		t.Fatalf("channel.lastRun: %+v %v", lr, err)
	}
	tm.Shows(t, "view1", "[settled turn 1]")

	// The view killed: the job runs on; another invocation (a second
	// plugin process) reads what the first wrote and re-attaches.
	p2 := h.start(t)
	drive.Reattach(t, ctx, p2, tm, jt, "view1", "view2", "[settled turn 1]")
	if rc, err := caller.Invoke(ctx, p2, protocol.MethodChannelReceipt, protocol.ReceiptParams{Base: protocol.Base{Target: jt}, MsgID: "msg-1"}); err != nil || rc.State != "accepted" {
		t.Fatalf("channel.receipt from another process: %+v %v", rc, err)
	}

	if _, err := caller.Invoke(ctx, p2, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: key}); err != nil {
		t.Fatalf("job.stop: %v", err)
	}
	if st, err := caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt}); err != nil || st.State != protocol.JobEnded {
		t.Fatalf("job.status after job.stop: %+v %v", st, err)
	}
	tm.Shows(t, "view2", "[mu: the job")
	tm.Shows(t, "view2", "[the view exited: 0]")
	if _, err := caller.Invoke(ctx, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: key}); err != nil {
		t.Fatalf("job.stop again: %v", err)
	}
}

// A start whose command line passes the host's one-argument bound (docs/ssh.md,
// Jobs: the Runner) is refused as permanent, naming spec.cmd, with nothing
// started (the fenced lookup answers none): a spec.cmd of 130 KiB (past
// one exec argument: tmuxjob refuses it) and one that fits an argument but
// not the command line around it (the Runner refuses it); a spec.cmd of
// 64 KiB, the documented size that always fits, starts.
func TestJobStartTooLongForTheCommandLine(t *testing.T) {
	ctx := waitfor.Context(t, 2*time.Minute)
	h := newJobHost(t, testsshd.Options{})
	p := h.start(t)
	sp := h.spec("a", ".", nil)
	for _, n := range []int{130 << 10, tmuxjob.MaxArg - 64} {
		key := newKey("long")
		sp.Cmd = ": " + strings.Repeat("x", n-2)
		_, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: h.host()}, Key: key, Spec: sp})
		var re *caller.RemoteError
		if !errors.As(err, &re) || re.Kind != protocol.Permanent || !strings.Contains(re.Message, "spec.cmd") || !strings.Contains(re.Message, "128 KiB") {
			t.Fatalf("job.start of a spec.cmd of %d bytes: %v, want permanent naming spec.cmd and the bound", n, err)
		}
		lr, err := caller.Invoke(ctx, p, protocol.MethodJobLookup, protocol.LookupParams{Base: protocol.Base{Target: h.host()}, Key: key, Fence: true})
		if err != nil || !lr.None {
			t.Fatalf("the fenced lookup: %+v %v, want none", lr, err)
		}
	}
	key := newKey("long")
	sp.Cmd = h.spec("a", ".", nil).Cmd + " # " + strings.Repeat("x", 64<<10)
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: h.host()}, Key: key, Spec: sp})
	if err != nil {
		t.Fatalf("job.start of a 64 KiB spec.cmd: %v", err)
	}
	target := h.jobTarget(key, res.Handle, "a")
	waitfor.Eventually(t, "the agent with a 64 KiB spec.cmd ready", func() bool {
		bl, err := caller.Invoke(ctx, p, protocol.MethodChannelBaseline, protocol.Base{Target: target})
		return err == nil && bl != nil
	})
	if _, err := caller.Invoke(ctx, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: target}, Key: key}); err != nil {
		t.Fatalf("job.stop: %v", err)
	}
}

// The Runner's bound is the host's: a command line of exactly
// maxCommandLine bytes runs; one byte more is refused (permanent, nothing
// sent); and sent anyway (the bound lifted), the host cannot run it.
func TestRunnerCommandLineBound(t *testing.T) {
	ctx := context.Background()
	s := testsshd.Start(t, testsshd.Options{})
	b := New(Config{SSHConfig: s.Config}, nil)
	defer b.Close()
	r := b.Runner(s.Alias)
	argv := func(extra int) []string {
		a := []string{"/bin/sh", "-c", "echo ran #"}
		n := len(wrapperCommand(runnerTimeout, ".", a, nil, true))
		a[2] += strings.Repeat("x", maxCommandLine-n+extra)
		return a
	}
	if out, _, code, err := r.Run(ctx, argv(0), nil); err != nil || code != 0 || string(out) != "ran\n" {
		t.Fatalf("a command line of %d bytes: %q exit %d %v", maxCommandLine, out, code, err)
	}
	_, _, _, err := r.Run(ctx, argv(1), nil)
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Kind != protocol.Permanent || !errors.Is(err, tmuxjob.ErrTooLong) {
		t.Fatalf("one byte more: %v, want permanent, tmuxjob.ErrTooLong", err)
	}
	long := argv(1)
	old := maxCommandLine
	maxCommandLine = 1 << 20
	defer func() { maxCommandLine = old }()
	if out, _, code, err := r.Run(ctx, long, nil); err == nil && code == 0 || strings.Contains(string(out), "ran") {
		t.Fatalf("the host ran a command line past the bound: %q exit %d %v", out, code, err)
	}
}

// A value that fits one argument but not the run's command line is
// refused naming that value, not spec.cmd: a 125 KiB key for job.start, a
// 125 KiB msgId for channel.send (permanent: nothing was sent).
func TestTooLongNamesTheField(t *testing.T) {
	ctx := waitfor.Context(t, 2*time.Minute)
	h := newJobHost(t, testsshd.Options{})
	p := h.start(t)
	long := strings.Repeat("k", 125<<10)
	_, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: h.host()}, Key: long, Spec: h.spec("a", ".", nil)})
	var re *caller.RemoteError
	if !errors.As(err, &re) || re.Kind != protocol.Permanent || !strings.HasPrefix(re.Message, "job.start: the key (") {
		t.Fatalf("job.start of a 125 KiB key: %v, want permanent naming the key", err)
	}
	key := newKey("msg")
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: h.host()}, Key: key, Spec: h.spec("a", ".", nil)})
	if err != nil {
		t.Fatal(err)
	}
	jt := h.jobTarget(key, res.Handle, "a")
	drive.Baseline(t, ctx, p, jt)
	_, err = caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: "hi", MsgID: long, Mode: protocol.ModeFollowUp})
	if !errors.As(err, &re) || re.Kind != protocol.Permanent || !strings.HasPrefix(re.Message, "channel.send: msgId (") {
		t.Fatalf("channel.send of a 125 KiB msgId: %v, want permanent naming msgId", err)
	}
}
