package caller

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
)

// TestDeadlineCancelsThenStops: past a call's deadline the caller sends
// $/cancel for it, then the stop sequence; the plugin sees them in order.
func TestDeadlineCancelsThenStops(t *testing.T) {
	h := newHarness(t, "raw", "raw:hang")
	p := h.start(t)
	_, err := p.Call(context.Background(), protocol.MethodLinkExec.Name, execParams("x"), 200*time.Millisecond)
	if !errors.Is(err, ErrUnanswered) || !errors.Is(err, ErrDeadline) {
		t.Fatalf("err %v, want unanswered (deadline)", err)
	}
	rep := p.Stop()
	if !rep.Graceful || !errors.Is(rep.Cause, ErrDeadline) || !rep.GroupEmpty {
		t.Fatalf("report %+v", rep)
	}
	out := h.tr.Lines(Out)
	// initialize, link.exec id 2, $/cancel {id:2}, shutdown id 3.
	want := []string{
		`^\{"jsonrpc":"2.0","id":1,"method":"initialize",`,
		`^\{"jsonrpc":"2.0","id":2,"method":"link.exec","params":\{"deadline":\d+,`,
		`^\{"jsonrpc":"2.0","method":"\$/cancel","params":\{"id":2\}\}$`,
		`^\{"jsonrpc":"2.0","id":3,"method":"shutdown"\}$`,
	}
	if len(out) != len(want) {
		t.Fatalf("outbound lines %q", out)
	}
	for i, re := range want {
		if !regexp.MustCompile(re).MatchString(out[i]) {
			t.Errorf("line %d: %s does not match %s", i, out[i], re)
		}
	}
	// The plugin saw the cancel, then shutdown, then stdin's end.
	log := h.stderr.String()
	iC, iS, iE := strings.Index(log, `cancel {"id":2}`), strings.Index(log, "shutdown"), strings.Index(log, "eof")
	if iC < 0 || iS < iC || iE < iS {
		t.Fatalf("the plugin saw: %q", log)
	}
}

// TestDeadlineOnRealPlugin: the same against protocol.Serve: the handler's
// context ends (by $/cancel) and the plugin exits by itself.
func TestDeadlineOnRealPlugin(t *testing.T) {
	h, p := startGood(t)
	ps := execParams("sleep")
	ps.TimeoutMs = 60000
	_, err := p.Call(context.Background(), protocol.MethodLinkExec.Name, ps, 300*time.Millisecond)
	if !errors.Is(err, ErrDeadline) {
		t.Fatalf("err %v", err)
	}
	rep := p.Stop()
	if !rep.Graceful || !rep.GroupEmpty {
		t.Fatalf("report %+v", rep)
	}
	if !strings.Contains(h.stderr.String(), "exec cancelled") {
		t.Fatalf("the handler was not cancelled: %q", h.stderr.String())
	}
}

// TestExecDeadlineIsTimeoutPlusGrace: link.exec's deadline is its
// timeoutMs plus one grace; a read's is 10 s.
func TestExecDeadlineIsTimeoutPlusGrace(t *testing.T) {
	h, p := startGood(t)
	before := time.Now()
	if _, err := p.Exec(context.Background(), tgt, "true", ".", 7*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := Invoke(context.Background(), p, protocol.MethodJobStatus, protocol.Base{Target: tgt}); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	dl := regexp.MustCompile(`"deadline":(\d+)`)
	check := func(method string, budget time.Duration) {
		l := h.tr.Containing(Out, `"method":"`+method+`"`)
		if len(l) != 1 {
			t.Fatalf("%s lines %q", method, l)
		}
		ms, _ := strconv.ParseInt(dl.FindStringSubmatch(l[0])[1], 10, 64)
		lo, hi := before.Add(budget).UnixMilli(), after.Add(budget).UnixMilli()
		if ms < lo || ms > hi {
			t.Errorf("%s deadline %d outside [%d, %d]", method, ms, lo, hi)
		}
	}
	check(protocol.MethodLinkExec.Name, 7*time.Second+protocol.Grace)
	check(protocol.MethodJobStatus.Name, DefaultReadTimeout)
	if l := h.tr.Containing(Out, `"timeoutMs":7000`); len(l) != 1 {
		t.Errorf("timeoutMs not 7000: %q", h.tr.Lines(Out))
	}
}

// TestCancelledBeforeWriteNeverSent: a call whose ctx ended before it was
// written fails not sent, is never on the wire, and the plugin keeps going.
func TestCancelledBeforeWriteNeverSent(t *testing.T) {
	h, p := startGood(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Exec(ctx, tgt, "never-sent", ".", 0)
	var ns *NotSentError
	if !errors.As(err, &ns) || !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnanswered) {
		t.Fatalf("err %v, want not sent (canceled)", err)
	}
	if l := h.tr.Containing(Out, "never-sent"); len(l) != 0 {
		t.Fatalf("written: %q", l)
	}
	select {
	case <-p.Stopping():
		t.Fatal("the plugin was stopped")
	default:
	}
	if _, err := p.Exec(context.Background(), tgt, "true", ".", 0); err != nil {
		t.Fatalf("the next call: %v", err)
	}
}

// TestCancelWhileWaitingToWrite: a call queued behind a write that a
// plugin which stopped reading holds is cancelled before it is written: not
// sent, never on the wire. The blocked call, cancelled mid-write, is
// unanswered (its line is cut) and stops the plugin.
func TestCancelWhileWaitingToWrite(t *testing.T) {
	h := newHarness(t, "raw", "raw:stall")
	h.cfg.StopGrace = 200 * time.Millisecond
	p := h.start(t)
	big := execParams(strings.Repeat("a", 900<<10)) // far past the pipe's buffer
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	errA := make(chan error, 1)
	go func() { _, err := p.Call(ctxA, protocol.MethodLinkExec.Name, big, time.Minute); errA <- err }()
	// The write is blocked once the pipe holds bytes: it cannot be whole.
	waitfor.Eventually(t, "the big write to fill the pipe", func() bool { return pipeBytes(t, p) > 0 })
	ctxB, cancelB := context.WithCancel(context.Background())
	errB := make(chan error, 1)
	go func() {
		_, err := p.Call(ctxB, protocol.MethodJobStatus.Name, protocol.Base{Target: tgt}, time.Minute)
		errB <- err
	}()
	cancelB()
	if err := <-errB; !errors.Is(err, ErrNotSent) || !errors.Is(err, context.Canceled) {
		t.Fatalf("B: %v, want not sent (canceled)", err)
	}
	select {
	case err := <-errA:
		t.Fatalf("A returned while its write should block: %v", err)
	default:
	}
	cancelA()
	if err := <-errA; !errors.Is(err, ErrUnanswered) || !errors.Is(err, context.Canceled) {
		t.Fatalf("A: %v, want unanswered (canceled)", err)
	}
	rep := p.Stop()
	if !rep.GroupEmpty {
		t.Fatalf("report %+v", rep)
	}
	if l := h.tr.Containing(Out, `"job.status"`); len(l) != 0 {
		t.Fatalf("B was written: %q", l)
	}
}

// pipeBytes is how many bytes wait in the plugin's stdin pipe (TIOCINQ alias FIONREAD,
// without making the descriptor blocking).
func pipeBytes(t *testing.T, p *Plugin) int {
	rc, err := p.stdin.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := rc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPendingCallsUnansweredOnStop: Stop fails every pending call
// unanswered, after sending $/cancel for each.
func TestPendingCallsUnansweredOnStop(t *testing.T) {
	h := newHarness(t, "raw", "raw:hang")
	p := h.start(t)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := p.Call(context.Background(), protocol.MethodJobStatus.Name, protocol.Base{Target: tgt}, time.Minute)
			errs <- err
		}()
	}
	waitfor.Eventually(t, "two calls on the wire", func() bool { return len(h.tr.Containing(Out, `"job.status"`)) == 2 })
	p.Stop()
	for range 2 {
		if err := <-errs; !errors.Is(err, ErrUnanswered) || !errors.Is(err, ErrStopped) {
			t.Fatalf("pending call: %v", err)
		}
	}
	if n := len(h.tr.Containing(Out, `"method":"$/cancel","params":{"id":`)); n != 2 {
		t.Fatalf("%d cancels in %q", n, h.tr.Lines(Out))
	}
}

// TestIgnoringEOFIsKilled: a plugin (and its child) that ignore stdin's end
// are killed, as a group, after the grace.
func TestIgnoringEOFIsKilled(t *testing.T) {
	h := newHarness(t, "raw", "raw:ignore-eof-child")
	p := h.start(t)
	waitfor.Eventually(t, "the child", func() bool { return strings.Contains(h.stderr.String(), "child ") })
	start := time.Now()
	rep := p.Stop()
	if rep.Graceful || rep.Killed != 2 || !rep.GroupEmpty || !rep.LeaderKilled() {
		t.Fatalf("report %+v, want two killed, the leader among them, group empty", rep)
	}
	if waited := time.Since(start); waited < protocol.Grace {
		t.Fatalf("killed after %v, before the 5 s grace", waited)
	}
	if n := len(groupMembers(p.Pgid())); n != 0 {
		t.Fatalf("%d processes left in the group", n)
	}
}

// TestLeaderExitKillsGroup: when the leader exits, what is left of its
// group is killed at once, and the plugin is stopped.
func TestLeaderExitKillsGroup(t *testing.T) {
	h := newHarness(t, "raw", "raw:leave-child")
	p := h.start(t)
	<-p.Done()
	rep := p.Report()
	if rep.LeftAfterLeader != 1 || rep.Graceful || !rep.GroupEmpty || rep.LeaderKilled() || !errors.Is(rep.Cause, ErrExited) && !errors.Is(rep.Cause, ErrStdoutClosed) {
		t.Fatalf("report %+v", rep)
	}
	pid := 0
	for _, f := range strings.Fields(h.stderr.String()) {
		if n, err := strconv.Atoi(f); err == nil {
			pid = n
		}
	}
	if pid == 0 {
		t.Fatalf("no child pid in %q", h.stderr.String())
	}
	if _, state, ok := procStat(pid); ok && state != 'Z' {
		t.Fatalf("child %d still alive (state %c)", pid, state)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		if _, state, _ := procStat(pid); state != 'Z' {
			t.Fatalf("child %d alive", pid)
		}
	}
	if _, err := p.Exec(context.Background(), tgt, "x", ".", 0); !errors.Is(err, ErrNotSent) {
		t.Fatalf("call after the exit: %v", err)
	}
}

func TestFirstStderrLine(t *testing.T) {
	h := newHarness(t, "raw", "raw:stderr-long")
	p := h.start(t)
	waitfor.Eventually(t, "stderr", func() bool { return strings.Contains(h.stderr.String(), "second line") })
	got := p.FirstStderrLine()
	if got != strings.Repeat("é", 400) {
		t.Fatalf("first line (%d runes) %q", len([]rune(got)), got)
	}
}

// TestCloseStdinOnly: CloseStdin sends nothing but EOF; a good plugin's
// group empties by itself, one that ignores EOF is killed.
func TestCloseStdinOnly(t *testing.T) {
	h, p := startGood(t)
	rep := p.CloseStdin()
	if !rep.Graceful || !rep.GroupEmpty || rep.LeaderKilled() || !errors.Is(rep.Cause, ErrHangup) {
		t.Fatalf("good plugin: %+v", rep)
	}
	if n := len(h.tr.Lines(Out)); n != 1 {
		t.Fatalf("CloseStdin wrote messages: %q", h.tr.Lines(Out))
	}
	h = newHarness(t, "raw", "raw:ignore-eof")
	h.cfg.StopGrace = 300 * time.Millisecond
	p = h.start(t)
	if rep := p.CloseStdin(); rep.Graceful || rep.Killed != 1 || !rep.GroupEmpty || !rep.LeaderKilled() {
		t.Fatalf("EOF-ignoring plugin: %+v", rep)
	}
	if !strings.Contains(h.stderr.String(), "eof") || strings.Contains(h.stderr.String(), "shutdown") {
		t.Fatalf("the plugin saw: %q", h.stderr.String())
	}
}
