package ssh

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/panes"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// Files go over SFTP where the host serves it: the test agent's install,
// a read by offset; job.checkSteps' agent phase passes every step.
func TestFilesOverSFTP(t *testing.T) {
	ctx := waitfor.Context(t, 3*time.Minute)
	h := newJobHost(t, testsshd.Options{})
	if log := h.s.LogText(); !strings.Contains(log, "subsystem 'sftp'") {
		t.Fatalf("the agent was not installed over SFTP; sshd's log:\n%s", drive.Tail(log))
	}
	b := New(Config{SSHConfig: h.s.Config}, nil)
	defer b.Close()
	r := b.Runner(h.s.Alias).(runner)
	data, ok, err := r.ReadFileAt(ctx, h.agent, 10, 64)
	if err != nil || !ok || !bytes.Equal(data, agent.Script[10:74]) {
		t.Fatalf("ReadFileAt: %q %v %v", data, ok, err)
	}
	if data, ok, err := r.ReadFileAt(ctx, h.agent, int64(len(agent.Script)), 64); err != nil || !ok || len(data) != 0 {
		t.Fatalf("ReadFileAt at the end: %q %v %v", data, ok, err)
	}
	p := h.start(t)
	steps, err := caller.Invoke(ctx, p, protocol.MethodJobCheckSteps, protocol.CheckStepsParams{Base: protocol.Base{Target: h.host()}, Phase: protocol.PhaseAgent})
	if err != nil || len(steps) != 6 {
		t.Fatalf("job.checkSteps: %+v %v", steps, err)
	}
	for i, name := range []string{"tmux", "tools", "state-root", "watch", "agents", "sftp"} {
		if steps[i].Step != name || steps[i].OK != protocol.StepPassed {
			t.Errorf("step %d: %+v, want %s passed", i, steps[i], name)
		}
	}
}

// A host without the SFTP subsystem: the check step says so (a warning
// naming the sshd_config line), and everything falls back to scripts: the
// install, and the view's log.
func TestNoSFTPFallsBack(t *testing.T) {
	ctx := waitfor.Context(t, 3*time.Minute)
	h := newJobHost(t, testsshd.Options{NoSFTP: true})
	b := New(Config{SSHConfig: h.s.Config}, nil)
	defer b.Close()
	if _, ok, err := b.Runner(h.s.Alias).(runner).ReadFileAt(ctx, h.agent, 0, 10); ok || err != nil {
		t.Fatalf("ReadFileAt without SFTP: ok %v, %v", ok, err)
	}
	out, _, code, err := b.Runner(h.s.Alias).Run(ctx, []string{"cat", h.agent}, nil)
	if err != nil || code != 0 || !bytes.Equal(out, agent.Script) {
		t.Fatalf("the agent installed without SFTP: exit %d %v, %d bytes", code, err, len(out))
	}
	if log := h.s.LogText(); strings.Contains(log, "subsystem 'sftp'") {
		t.Fatalf("sshd started an sftp subsystem it does not have:\n%s", drive.Tail(log))
	}
	p := h.start(t)
	steps, err := caller.Invoke(ctx, p, protocol.MethodJobCheckSteps, protocol.CheckStepsParams{Base: protocol.Base{Target: h.host()}, Phase: protocol.PhaseAgent})
	if err != nil || len(steps) != 6 {
		t.Fatalf("job.checkSteps: %+v %v", steps, err)
	}
	if s := steps[5]; s.Step != "sftp" || s.OK != protocol.StepWarn || !strings.Contains(s.Detail, "Subsystem sftp internal-sftp") {
		t.Fatalf("the sftp step: %+v", s)
	}
	key := newKey("nosftp")
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: h.host()}, Key: key, Spec: h.spec("a", ".", nil)})
	if err != nil {
		t.Fatalf("job.start: %v", err)
	}
	tm := panes.NewPanes(t)
	tm.Open(t, "v", res.View.Command, res.View.Env)
	tm.Shows(t, "v", "mu test agent: ready")
	if _, err := caller.Invoke(ctx, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: h.jobTarget(key, res.Handle, "a")}, Key: key}); err != nil {
		t.Fatalf("job.stop: %v", err)
	}
	tm.Shows(t, "v", "[mu: the job")
}

// A jobs root the user cannot write fails the state-root step with the
// remedy naming --jobs-root.
func TestCheckStepsStateRoot(t *testing.T) {
	ctx := waitfor.Context(t, 2*time.Minute)
	s := testsshd.Start(t, testsshd.Options{})
	p := startJobsPlugin(t, s, "/proc/mu-jobs")
	steps, err := caller.Invoke(ctx, p, protocol.MethodJobCheckSteps, protocol.CheckStepsParams{Base: protocol.Base{Target: protocol.Target{Host: protocol.HostRef{Name: s.Alias}}}, Phase: protocol.PhaseAgent})
	if err != nil || len(steps) != 6 {
		t.Fatalf("job.checkSteps: %+v %v", steps, err)
	}
	if st := steps[2]; st.Step != "state-root" || st.OK != protocol.StepFailed || !strings.Contains(st.Detail, "--jobs-root") {
		t.Fatalf("the state-root step: %+v", st)
	}
	if st := steps[0]; st.OK != protocol.StepPassed {
		t.Fatalf("the tmux step: %+v", st)
	}
}
