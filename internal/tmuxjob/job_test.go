package tmuxjob_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/testlog"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

func kindOf(err error) protocol.Kind {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe.Kind
	}
	return ""
}

// runView runs a view command the way mu does: sh -c, stdin /dev/null.
func runView(t *testing.T, v protocol.View) (*exec.Cmd, *testlog.LockedBuffer) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", v.Command)
	cmd.Stdin = nil // /dev/null
	for k, val := range v.Env {
		cmd.Env = append(os.Environ(), k+"="+val)
	}
	out := &testlog.LockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if v.Cwd != "" {
		cmd.Dir = v.Cwd
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, out
}

func TestStartLookupStatusAttachStop(t *testing.T) {
	h := newHost(t)
	ctx := waitfor.Context(t, 2*time.Minute)
	key := "job-1"
	res := h.startAgent(t, key, nil, "")
	if !strings.HasPrefix(res.Handle, "mu-") || res.View.Command == "" || res.View.Env == nil {
		t.Fatalf("start result: %+v", res)
	}
	lk, err := h.jobs.Lookup(ctx, protocol.LookupParams{Base: base(key), Key: key})
	if err != nil || lk.Found == nil || lk.Found.Handle != res.Handle || lk.Found.View == nil || lk.Found.View.Command != res.View.Command {
		t.Fatalf("lookup: %+v %v", lk, err)
	}
	st, err := h.jobs.Status(ctx, key)
	if err != nil || st.State != protocol.JobRunning {
		t.Fatalf("status: %+v %v", st, err)
	}

	// The view, run for real with stdin from /dev/null, shows the agent.
	view, out := runView(t, res.View)
	waitfor.Eventually(t, "the view shows the agent's banner", func() bool { return strings.Contains(out.String(), "mu test agent: ready") })
	h.send(t, key, "m1", "hello from the test")
	waitfor.Eventually(t, "the view shows the turn", func() bool { return strings.Contains(out.String(), "[settled turn 1]") })
	// Killing the view leaves the job running; attach gives a new one.
	_ = view.Process.Kill()
	_ = view.Wait()
	if st, _ := h.jobs.Status(ctx, key); st.State != protocol.JobRunning {
		t.Fatalf("status after the view died: %+v", st)
	}
	v2, err := h.jobs.Attach(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	_, out2 := runView(t, v2)
	waitfor.Eventually(t, "the new view shows the history", func() bool { return strings.Contains(out2.String(), "agent: hello from the test") })

	if err := h.jobs.Stop(ctx, key); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if left := marked(h.root); len(left) > 0 {
		t.Fatalf("processes of the job left after stop: %v", left)
	}
	st, err = h.jobs.Status(ctx, key)
	if err != nil || st.State != protocol.JobEnded || st.Exit == nil || *st.Exit != tmuxjob.StoppedExit {
		t.Fatalf("status after stop: %+v %v", st, err)
	}
	// Stop is idempotent.
	if err := h.jobs.Stop(ctx, key); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	// A stopped key never starts again.
	if _, err := h.jobs.Start(ctx, protocol.JobStartParams{Base: base(key), Key: key, Spec: spec("sleep 100")}); kindOf(err) != protocol.Permanent {
		t.Fatalf("start after stop: %v", err)
	}
}

func TestStartIsIdempotent(t *testing.T) {
	h := newHost(t)
	ctx := waitfor.Context(t, 2*time.Minute)
	count := filepath.Join(h.root, "count")
	s := spec("echo run >> " + words.ShQuote(count) + "; exec sleep 1000")
	p := protocol.JobStartParams{Base: base("k"), Key: "k", Spec: s}
	r1, err := h.jobs.Start(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Eventually(t, "the job ran", func() bool { b, _ := os.ReadFile(count); return len(b) > 0 })
	// Two more starts, one of them concurrent with a third.
	var wg sync.WaitGroup
	results := make([]protocol.JobStartResult, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); results[i], errs[i] = h.jobs.Start(ctx, p) }()
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil || results[i].Handle != r1.Handle {
			t.Fatalf("start %d: %+v %v", i, results[i], errs[i])
		}
	}
	time.Sleep(300 * time.Millisecond) // a second run would have written by now too
	if b, _ := os.ReadFile(count); string(b) != "run\n" {
		t.Fatalf("the command ran %q", b)
	}
	if n := len(marked(h.root)); n != 2 { // the wrapper and sleep
		t.Fatalf("%d processes carry the job's mark, want 2 (wrapper, sleep)", n)
	}
	if err := h.jobs.Stop(ctx, "k"); err != nil {
		t.Fatal(err)
	}
}

func TestFencedLookupMakesNoneFinal(t *testing.T) {
	h := newHost(t)
	ctx := waitfor.Context(t, 2*time.Minute)
	lk, err := h.jobs.Lookup(ctx, protocol.LookupParams{Base: base("f"), Key: "f"})
	if err != nil || !lk.None {
		t.Fatalf("unfenced lookup of an unknown key: %+v %v", lk, err)
	}
	// An unfenced none is not final: a start still takes effect.
	if _, err := h.jobs.Start(ctx, protocol.JobStartParams{Base: base("f"), Key: "f", Spec: spec("exec sleep 1000")}); err != nil {
		t.Fatalf("start after an unfenced none: %v", err)
	}
	lk, _ = h.jobs.Lookup(ctx, protocol.LookupParams{Base: base("f"), Key: "f", Fence: true})
	if lk.Found == nil {
		t.Fatalf("fenced lookup of a started key: %+v", lk)
	}
	lk, err = h.jobs.Lookup(ctx, protocol.LookupParams{Base: base("g"), Key: "g", Fence: true})
	if err != nil || !lk.None {
		t.Fatalf("fenced lookup: %+v %v", lk, err)
	}
	_, err = h.jobs.Start(ctx, protocol.JobStartParams{Base: base("g"), Key: "g", Spec: spec("exec sleep 1000")})
	if kindOf(err) != protocol.Permanent {
		t.Fatalf("start after a fenced none: %v", err)
	}
	if st, _ := h.jobs.Status(ctx, "g"); st.State != protocol.JobLost {
		t.Fatalf("status of a fenced key: %+v", st)
	}
	lk, _ = h.jobs.Lookup(ctx, protocol.LookupParams{Base: base("g"), Key: "g", Fence: true})
	if !lk.None {
		t.Fatalf("lookup after the refused start: %+v", lk)
	}
	_ = h.jobs.Stop(ctx, "f")
}

func TestExitCodeEnvAndCwd(t *testing.T) {
	h := newHost(t)
	ctx := waitfor.Context(t, 2*time.Minute)
	dir := filepath.Join(h.root, "work dir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hostile := "it's \"quoted\"\n$(touch pwned) `touch pwned2`; exit 9"
	// A short env file (start reads it with builtins), and one past that
	// bound (BIG: cat reads it).
	for key, env := range map[string]map[string]string{"e": {"FOO": hostile}, "e2": {"FOO": hostile, "BIG": strings.Repeat("b", 3000)}} {
		s := spec(`[ "${#BIG}" = ` + strconv.Itoa(len(env["BIG"])) + ` ] || exit 5; printf '%s' "$FOO" > out.` + key + `; pwd >> out.` + key + `; exit 7`)
		s.Cwd = dir
		s.Env = env
		if _, err := h.jobs.Start(ctx, protocol.JobStartParams{Base: base(key), Key: key, Spec: s}); err != nil {
			t.Fatal(err)
		}
		var st protocol.JobStatus
		waitfor.Eventually(t, "the job ends", func() bool { st, _ = h.jobs.Status(ctx, key); return st.State == protocol.JobEnded })
		if st.Exit == nil || *st.Exit != 7 {
			t.Fatalf("%s: status: %+v", key, st)
		}
		b, err := os.ReadFile(filepath.Join(dir, "out."+key))
		if err != nil || string(b) != hostile+dir+"\n" {
			t.Fatalf("%s: the job saw %q (%v)", key, b, err)
		}
	}
	for _, f := range []string{"pwned", "pwned2"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Fatalf("an env value was run as a command")
		}
	}
	// A refused spec: a field the kind does not honour.
	s2 := spec("true")
	s2.Sockets = []string{"/tmp/x.sock"}
	if _, err := h.jobs.Start(ctx, protocol.JobStartParams{Base: base("s"), Key: "s", Spec: s2}); kindOf(err) != protocol.Permanent {
		t.Fatalf("sockets: %v", err)
	}
	s3 := spec("true")
	s3.Env = map[string]string{"BAD NAME": "x"}
	if _, err := h.jobs.Start(ctx, protocol.JobStartParams{Base: base("s"), Key: "s", Spec: s3}); kindOf(err) != protocol.Permanent {
		t.Fatalf("bad env name: %v", err)
	}
}

func TestLostWhenTmuxServerGoes(t *testing.T) {
	h := newHost(t)
	ctx := waitfor.Context(t, 2*time.Minute)
	// The job ignores HUP, like an agent that survives its terminal: lost
	// must still be reported, and stop must still find and kill it.
	if _, err := h.jobs.Start(ctx, protocol.JobStartParams{Base: base("l"), Key: "l", Spec: spec("trap '' HUP; sleep 1000; sleep 1000")}); err != nil {
		t.Fatal(err)
	}
	waitfor.Eventually(t, "the job runs", func() bool { return len(marked(h.root)) >= 2 })
	if err := exec.Command("tmux", "-S", filepath.Join(h.root, "tmux.sock"), "kill-server").Run(); err != nil {
		t.Fatal(err)
	}
	st, err := h.jobs.Status(ctx, "l")
	if err != nil || st.State != protocol.JobLost || st.Reason == "" {
		t.Fatalf("status after the tmux server died: %+v %v", st, err)
	}
	if err := h.jobs.Stop(ctx, "l"); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if left := marked(h.root); len(left) > 0 {
		t.Fatalf("left after stop: %v", left)
	}
}

// failRunner is a Runner whose host never answers: the Engine is down.
type failRunner struct{}

func (failRunner) Run(context.Context, []string, []byte) ([]byte, []byte, int, error) {
	return nil, nil, -1, errors.New("engine unreachable")
}

func TestRunnerFailureIsUnknown(t *testing.T) {
	j, err := tmuxjob.New(failRunner{}, tmuxjob.Options{Root: "/var/lib/mu-jobs", Kind: "tmux", Channel: "c"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := waitfor.Context(t, 2*time.Minute)
	if st, err := j.Status(ctx, "k"); err != nil || st.State != protocol.JobUnknown || st.Reason == "" {
		t.Fatalf("status: %+v %v", st, err)
	}
	if lk, err := j.Lookup(ctx, protocol.LookupParams{Key: "k"}); err != nil || lk.Unknown == "" {
		t.Fatalf("lookup: %+v %v", lk, err)
	}
	if _, err := j.Start(ctx, protocol.JobStartParams{Key: "k", Spec: spec("true")}); kindOf(err) != protocol.UnknownOutcome {
		t.Fatalf("start: %v", err)
	}
	if err := j.Stop(ctx, "k"); kindOf(err) != protocol.UnknownOutcome {
		t.Fatalf("stop: %v", err)
	}
	if _, err := j.Send(ctx, protocol.SendParams{Base: base("k"), MsgID: "m", Text: "x"}); kindOf(err) != protocol.UnknownOutcome {
		t.Fatalf("send: %v", err)
	}
	if r, err := j.Receipt(ctx, protocol.ReceiptParams{Base: base("k"), MsgID: "m"}); err != nil || r.State != protocol.ReceiptUnreachable || r.ID != "m" {
		t.Fatalf("receipt: %+v %v", r, err)
	}
}

func TestStopKillsTheWholeJob(t *testing.T) {
	h := newHost(t)
	ctx := waitfor.Context(t, 2*time.Minute)
	// Background children, one in a group of its own (job control).
	cmd := "sleep 1000 & (sleep 1000 &) ; set -m; sleep 1000 & exec sleep 1000"
	if _, err := h.jobs.Start(ctx, protocol.JobStartParams{Base: base("w"), Key: "w", Spec: spec(cmd)}); err != nil {
		t.Fatal(err)
	}
	waitfor.Eventually(t, "the job's children run", func() bool { return len(marked(h.root)) >= 5 })
	if err := h.jobs.Stop(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	if left := marked(h.root); len(left) > 0 {
		t.Fatalf("left after stop: %v", left)
	}
}

// recRunner records every argv it runs.
type recRunner struct {
	tmuxjob.Runner
	mu   sync.Mutex
	argv [][]string
}

func (r *recRunner) Run(ctx context.Context, argv []string, stdin []byte) ([]byte, []byte, int, error) {
	r.mu.Lock()
	r.argv = append(r.argv, append([]string(nil), argv...))
	r.mu.Unlock()
	return r.Runner.Run(ctx, argv, stdin)
}

// spec.env values may be secrets: they reach the job, never an argument
// (a host's process list, an Engine's exec record) nor a reply.
func TestEnvValuesNeverTravelAsArguments(t *testing.T) {
	h := newHost(t)
	rr := &recRunner{Runner: tmuxjob.LocalRunner{}}
	j, err := tmuxjob.New(rr, tmuxjob.Options{Root: h.root, Kind: "tmux", Channel: "tmux-test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := waitfor.Context(t, 2*time.Minute)
	secret := "canary-7f3e9b1d"
	out := filepath.Join(h.root, "seen")
	s := spec(`printf '%s' "$TOKEN" > ` + words.ShQuote(out) + `; exec sleep 1000`)
	s.Env = map[string]string{"TOKEN": secret}
	res, err := j.Start(ctx, protocol.JobStartParams{Base: base("sec"), Key: "sec", Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Eventually(t, "the job saw its env", func() bool { b, _ := os.ReadFile(out); return string(b) == secret })
	st, _ := j.Status(ctx, "sec")
	lk, _ := j.Lookup(ctx, protocol.LookupParams{Base: base("sec"), Key: "sec"})
	if err := j.Stop(ctx, "sec"); err != nil {
		t.Fatal(err)
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for _, argv := range rr.argv {
		for _, a := range argv {
			if strings.Contains(a, secret) {
				t.Fatalf("an env value travelled as an argument: %q", argv[7:])
			}
		}
	}
	for _, v := range []any{res, st, lk} {
		if strings.Contains(fmt.Sprintf("%+v", v), secret) {
			t.Fatalf("an env value in a reply: %+v", v)
		}
	}
}

// Jobs started at once, each its own key, on one tmux server that the
// first of them starts: every one runs, each in its own session.
func TestConcurrentStartsOfManyKeys(t *testing.T) {
	h := newHost(t)
	ctx := waitfor.Context(t, 2*time.Minute)
	const n = 6
	var wg sync.WaitGroup
	handles := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("many-%d", i)
			r, err := h.jobs.Start(ctx, protocol.JobStartParams{Base: base(key), Key: key, Spec: spec("exec sleep 1000")})
			handles[i], errs[i] = r.Handle, err
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil || seen[handles[i]] {
			t.Fatalf("start %d: %q %v", i, handles[i], errs[i])
		}
		seen[handles[i]] = true
		if st, _ := h.jobs.Status(ctx, fmt.Sprintf("many-%d", i)); st.State != protocol.JobRunning {
			t.Fatalf("job %d: %+v", i, st)
		}
	}
	for i := range n {
		if err := h.jobs.Stop(ctx, fmt.Sprintf("many-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if left := marked(h.root); len(left) > 0 {
		t.Fatalf("left: %v", left)
	}
}

func TestCheckStepsSayWhatIsMissing(t *testing.T) {
	ctx := waitfor.Context(t, 2*time.Minute)
	// A host whose PATH has none of the tools, and a root no one can make.
	j, err := tmuxjob.New(tmuxjob.LocalRunner{Env: []string{"PATH=/nonexistent", "HOME=/"}},
		tmuxjob.Options{Root: "/proc/mu-jobs", Kind: "tmux", Channel: "c"})
	if err != nil {
		t.Fatal(err)
	}
	steps, err := j.CheckSteps(ctx, protocol.PhaseReach)
	if err != nil || len(steps) != 5 {
		t.Fatalf("%+v %v", steps, err)
	}
	for _, s := range steps[:3] {
		if s.OK != protocol.StepFailed || s.Detail == "" {
			t.Fatalf("step %s: %+v", s.Step, s)
		}
	}
	if !strings.Contains(steps[0].Detail, "tmux is not installed") {
		t.Fatalf("tmux step: %+v", steps[0])
	}
	// Without GNU tail a watch still works, by looks: said, not failed.
	if w := steps[3]; w.Step != "watch" || w.OK != protocol.StepPassed || !strings.Contains(w.Detail, "a look every 0.100s") {
		t.Fatalf("watch step: %+v", w)
	}
}

// On this machine (GNU coreutils, Linux) a watch wakes on the change
// itself, and the check step says so.
func TestCheckStepsSayHowAWatchWaits(t *testing.T) {
	h := newHost(t)
	steps, err := h.jobs.CheckSteps(waitfor.Context(t, 2*time.Minute), protocol.PhaseReach)
	if err != nil || len(steps) != 5 || steps[3].Step != "watch" || !strings.HasPrefix(steps[3].Detail, "inotify") {
		t.Fatalf("%+v %v", steps, err)
	}
}

// On a FUSE state root (Docker's fuse-overlayfs) GNU tail polls, inotify
// or not, and the check step says so (here a stat that says fuseblk).
func TestCheckStepsSayAFuseRootIsPolled(t *testing.T) {
	h := newHostOn(t, shimmed(t, "stat", "echo fuseblk\n"))
	steps, err := h.jobs.CheckSteps(waitfor.Context(t, 2*time.Minute), protocol.PhaseReach)
	if err != nil || len(steps) != 5 || steps[3].Step != "watch" || steps[3].OK != protocol.StepPassed ||
		!strings.HasPrefix(steps[3].Detail, "a look every 10 ms") || !strings.Contains(steps[3].Detail, "fuseblk") {
		t.Fatalf("%+v %v", steps, err)
	}
}

// A start racing the stop of the server's last session (the server exits as
// the start connects: "server exited unexpectedly") still starts: found by
// the integration suite's SIGKILL drill for job.stop.
func TestStartRacingLastSessionStop(t *testing.T) {
	h := newHost(t)
	ctx := waitfor.Context(t, 2*time.Minute)
	for i := 0; i < 20; i++ {
		a, b := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
		if _, err := h.jobs.Start(ctx, protocol.JobStartParams{Base: base(a), Key: a, Spec: spec("exec sleep 1000")}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var stopErr, startErr error
		wg.Add(2)
		go func() { defer wg.Done(); stopErr = h.jobs.Stop(ctx, a) }()
		go func() {
			defer wg.Done()
			_, startErr = h.jobs.Start(ctx, protocol.JobStartParams{Base: base(b), Key: b, Spec: spec("exec sleep 1000")})
		}()
		wg.Wait()
		if stopErr != nil || startErr != nil {
			t.Fatalf("round %d: stop %v, start %v", i, stopErr, startErr)
		}
		if st, err := h.jobs.Status(ctx, b); err != nil || st.State != protocol.JobRunning {
			t.Fatalf("round %d: the racing start's job is %+v %v", i, st, err)
		}
		if err := h.jobs.Stop(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
}
