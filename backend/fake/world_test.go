package fake

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func mkCall(t *testing.T, method string, params any) *protocol.Call {
	t.Helper()
	b, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	c := &protocol.Call{Method: method, Params: b}
	if err := json.Unmarshal(b, &c.Base); err != nil {
		t.Fatal(err)
	}
	return c
}

// serve runs fn, m's handler, on params as Serve calls it.
func serve[P, R any](ctx context.Context, t *testing.T, m protocol.Method[P, R], fn func(context.Context, *protocol.Call, P) (R, error), params P) (R, error) {
	t.Helper()
	return fn(ctx, mkCall(t, m.Name, params), params)
}

// The agent runs on the injected clock alone: with the clock still, a turn
// never settles; moved past --turn-ms, it has, whatever the wall time.
func TestSimulatedAgentIsDeterministicOnItsClock(t *testing.T) {
	clk := &clock{t: time.UnixMilli(1_000_000)}
	f, err := New(Config{Root: t.TempDir(), StateDir: t.TempDir(), TurnMs: 60_000, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tgt := protocol.Target{Host: protocol.HostRef{Name: "box"}, Agent: &protocol.AgentRef{Workstream: "ws", Name: "a"}}
	sp := protocol.JobSpec{Workstream: "ws", Name: "a", Role: "full-access", Cwd: ".", Env: map[string]string{}}
	if _, err := serve(ctx, t, protocol.MethodJobStart, f.jobStart, protocol.JobStartParams{Base: protocol.Base{Target: tgt}, Key: "j", Spec: sp}); err != nil {
		t.Fatal(err)
	}
	send := protocol.SendParams{Base: protocol.Base{Target: tgt, Deadline: 1}, Text: "hi", MsgID: "m1", Mode: protocol.ModeFollowUp}
	first, err := serve(ctx, t, protocol.MethodChannelSend, f.send, send)
	if err != nil {
		t.Fatal(err)
	}
	read := func() protocol.Reading {
		v, err := serve(ctx, t, protocol.MethodChannelReadStates, f.readStates, protocol.ReadStatesParams{Base: protocol.Base{Target: tgt}, Targets: []protocol.AgentName{{Workstream: "ws", Name: "a"}}})
		if err != nil {
			t.Fatal(err)
		}
		return v["ws/a"]
	}
	time.Sleep(50 * time.Millisecond)
	if r := read(); r.State != protocol.TurnBusy || r.Since != 1_000_000 {
		t.Fatalf("with the clock still: %+v", r)
	}
	clk.t = clk.t.Add(59_999 * time.Millisecond)
	if r := read(); r.State != protocol.TurnBusy {
		t.Fatalf("1 ms before the settle: %+v", r)
	}
	clk.t = clk.t.Add(time.Millisecond)
	if r := read(); r.State != protocol.TurnIdle || r.Runs != 1 || r.Since != 1_060_000 {
		t.Fatalf("at the settle: %+v", r)
	}
	// A resend (a new deadline) returns the same bytes and starts no turn.
	send.Deadline = 2
	again, err := serve(ctx, t, protocol.MethodChannelSend, f.send, send)
	a, _ := json.Marshal(again)
	b, _ := json.Marshal(first)
	if err != nil || string(a) != string(b) {
		t.Fatalf("resend: %s %v, want %s", a, err, b)
	}
	if r := read(); r.State != protocol.TurnIdle || r.Runs != 1 {
		t.Fatalf("after the resend: %+v", r)
	}
}

// "gone is a proof": once a host's ttl has run out, its status is gone,
// its jobs read lost and take no delivery, its link refuses, and its
// directory no longer exists.
func TestHostPastItsTTLIsGoneWithItsJobsAndDirectory(t *testing.T) {
	clk := &clock{t: time.UnixMilli(1_000_000)}
	f, err := New(Config{Root: t.TempDir(), StateDir: t.TempDir(), TurnMs: 10, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	acq, err := serve(ctx, t, protocol.MethodHostAcquire, f.hostAcquire, protocol.AcquireParams{Key: "h", Params: map[string]string{"ttl": "1m"}})
	if err != nil {
		t.Fatal(err)
	}
	handle := acq.Handle
	hostT := protocol.Target{Host: protocol.HostRef{Name: "box", Handle: handle, Instance: "fake"}}
	sp := protocol.JobSpec{Workstream: "ws", Name: "a", Role: "full-access", Cwd: ".", Env: map[string]string{}}
	st, err := serve(ctx, t, protocol.MethodJobStart, f.jobStart, protocol.JobStartParams{Base: protocol.Base{Target: hostT}, Key: "j", Spec: sp})
	if err != nil {
		t.Fatal(err)
	}
	jobT := hostT
	jobT.Job = &protocol.JobRef{Kind: Kind, Key: "j", Handle: st.Handle}
	jobT.Agent = &protocol.AgentRef{Workstream: "ws", Name: "a"}
	exec := func() error {
		_, err := serve(ctx, t, protocol.MethodLinkExec, f.linkExec, protocol.ExecParams{Base: protocol.Base{Target: hostT}, Script: "echo hi > f", Cwd: ".", TimeoutMs: 5000})
		return err
	}
	if err := exec(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.Root(), "hosts", handle)
	if _, err := os.Stat(filepath.Join(dir, "f")); err != nil {
		t.Fatalf("the script did not run in the host's directory: %v", err)
	}

	clk.t = clk.t.Add(time.Minute)
	hs, err := serve(ctx, t, protocol.MethodHostStatus, f.hostStatus, protocol.Base{Target: hostT})
	if err != nil || hs.State != protocol.HostGone {
		t.Fatalf("host.status past the ttl: %+v %v", hs, err)
	}
	js, err := serve(ctx, t, protocol.MethodJobStatus, f.jobStatus, protocol.Base{Target: jobT})
	if s := js; err != nil || (s.State != protocol.JobLost && s.State != protocol.JobEnded) {
		t.Fatalf("job.status on a gone host: %+v %v, want lost or ended", js, err)
	}
	var pe *protocol.Error
	if err := exec(); !errors.As(err, &pe) || pe.Kind != protocol.Permanent {
		t.Fatalf("link.exec on a gone host: %v, want a permanent refusal", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the gone host's directory: %v, want it removed", err)
	}
	send := protocol.SendParams{Base: protocol.Base{Target: jobT}, Text: "hi", MsgID: "m1", Mode: protocol.ModeFollowUp}
	if _, err := serve(ctx, t, protocol.MethodChannelSend, f.send, send); err == nil {
		t.Fatal("a delivery to a job on a gone host was accepted")
	}
	b, err := os.ReadFile(filepath.Join(f.Root(), "transcripts", jobT.Job.Handle+".json"))
	if err != nil || !strings.Contains(string(b), `"ended":true`) {
		t.Fatalf("the job's transcript does not say it ended (its view would follow it forever): %v %.300s", err, b)
	}
	if _, err := serve(ctx, t, protocol.MethodHostRelease, f.hostRelease, protocol.KeyParams{Base: protocol.Base{Target: hostT}, Key: "h"}); err != nil {
		t.Fatalf("host.release of a gone host: %v", err)
	}
}

// A run on a host whose ttl runs out during it is killed with the host
// (nothing runs on a host that is gone) and answers unknown-outcome. The
// clock stands still, so the host reads up when the run starts however
// slow the machine; the run's end comes from the ttl left (300 ms).
func TestRunEndsWhenItsHostsTTLRunsOut(t *testing.T) {
	clk := &clock{t: time.UnixMilli(1_000_000)}
	f, err := New(Config{Root: t.TempDir(), Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	acq, err := serve(ctx, t, protocol.MethodHostAcquire, f.hostAcquire, protocol.AcquireParams{Key: "h", Params: map[string]string{"ttl": "300ms"}})
	if err != nil {
		t.Fatal(err)
	}
	hostT := protocol.Target{Host: protocol.HostRef{Name: "box", Handle: acq.Handle}}
	pidFile := filepath.Join(t.TempDir(), "pid")
	_, err = serve(ctx, t, protocol.MethodLinkExec, f.linkExec, protocol.ExecParams{Base: protocol.Base{Target: hostT},
		Script: "echo $$ > '" + pidFile + "'; exec sleep 30", Cwd: ".", TimeoutMs: 20000})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Kind != protocol.UnknownOutcome {
		t.Fatalf("a run cut by its host's ttl: %v, want unknown-outcome", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("the script (pid %d) still runs on a host that is gone", pid)
	}
}
