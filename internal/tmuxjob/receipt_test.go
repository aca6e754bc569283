package tmuxjob_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// isDeliver reports whether argv runs the deliver script.
func isDeliver(argv []string) bool {
	return len(argv) > 2 && strings.Contains(argv[2], "\n# deliver:")
}

// lateRunner holds every deliver run before it starts, until release is
// closed: the run of a delivery that outlives its plugin (the Engine does
// not stop an exec when its client goes) and comes to the host late.
type lateRunner struct {
	tmuxjob.Runner
	arrived chan struct{} // closed when the deliver run is held
	release chan struct{}
}

func (l *lateRunner) Run(ctx context.Context, argv []string, stdin []byte) ([]byte, []byte, int, error) {
	if isDeliver(argv) {
		close(l.arrived)
		<-l.release
	}
	return l.Runner.Run(ctx, argv, stdin)
}

// heldRunner runs a deliver script with its text on a pipe that stays open
// until release is closed: the script blocks at writing the text, holding
// the job's lock, between its start and its commit. Other runs go to the
// LocalRunner.
type heldRunner struct {
	release chan struct{}
}

// heldStdin yields the text, then blocks until release, then EOF.
type heldStdin struct {
	text    io.Reader
	release chan struct{}
}

func (s *heldStdin) Read(p []byte) (int, error) {
	if n, err := s.text.Read(p); err != io.EOF {
		return n, err
	}
	<-s.release
	return 0, io.EOF
}

func (r *heldRunner) Run(ctx context.Context, argv []string, stdin []byte) ([]byte, []byte, int, error) {
	if !isDeliver(argv) {
		return tmuxjob.LocalRunner{}.Run(ctx, argv, stdin)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = tmuxjob.MinimalEnv()
	cmd.Stdin = &heldStdin{text: strings.NewReader(string(stdin)), release: r.release}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return []byte(out.String()), []byte(errb.String()), ee.ExitCode(), nil
	}
	if err != nil {
		return nil, nil, -1, err
	}
	return []byte(out.String()), []byte(errb.String()), 0, nil
}

// inboxMsgIDs lists the msgIds of the deliveries in the job's inbox.
func inboxMsgIDs(t *testing.T, h *host, key string) []string {
	t.Helper()
	inbox := filepath.Join(h.jobs.ChannelDir(key), "inbox")
	ents, err := os.ReadDir(inbox)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(inbox, e.Name(), "msgid"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, string(b))
	}
	return ids
}

func (h *host) receipt(t *testing.T, key, msgID string) protocol.Receipt {
	t.Helper()
	r, err := h.jobs.Receipt(waitfor.Context(t, 2*time.Minute), protocol.ReceiptParams{Base: base(key), MsgID: msgID})
	if err != nil || r.ID != msgID {
		t.Fatalf("receipt %s: %+v %v", msgID, r, err)
	}
	return r
}

// TestNotAcceptedIsFinal: a receipt answers not-accepted while a
// delivery of the same msgId has not reached the host yet; when that
// delivery's run then comes, it is refused (nothing delivered), and the
// receipt stays not-accepted. Before the fence the late run landed, and
// the receipt turned accepted.
func TestNotAcceptedIsFinal(t *testing.T) {
	key := "na"
	h, ctx := withAgent(t, key)
	lr := &lateRunner{Runner: tmuxjob.LocalRunner{}, arrived: make(chan struct{}), release: make(chan struct{})}
	sent := sendAsync(ctx, h.via(t, lr), key, "m1", "late")
	<-lr.arrived
	if r := h.receipt(t, key, "m1"); r.State != protocol.ReceiptNotAccepted {
		t.Fatalf("receipt while the delivery is held before its run: %+v", r)
	}
	close(lr.release)
	err := <-sent
	if r := h.receipt(t, key, "m1"); r.State != protocol.ReceiptNotAccepted {
		t.Fatalf("a receipt answered not-accepted, then the late delivery landed (send: %v): now %+v", err, r)
	}
	if kindOf(err) != protocol.Permanent || !strings.Contains(err.Error(), "not-accepted") {
		t.Fatalf("the late delivery after a not-accepted receipt: %v, want a permanent refusal", err)
	}
	if ids := inboxMsgIDs(t, h, key); len(ids) != 0 {
		t.Fatalf("inbox after the refused delivery: %q", ids)
	}
	// A resend of the msgId, through any plugin, is refused the same way.
	if _, err := h.jobs.Send(ctx, protocol.SendParams{Base: base(key), Text: "again", MsgID: "m1", Mode: protocol.ModeFollowUp}); kindOf(err) != protocol.Permanent {
		t.Fatalf("a resend after not-accepted: %v", err)
	}
	// Other msgIds are not touched.
	h.send(t, key, "m2", "next")
	if o := h.lastRun(t, key, 0); o.LastText != "agent: next" {
		t.Fatalf("turn 1: %+v", o)
	}
}

// TestReceiptWaitsForADeliveryWriting: a receipt asked while a delivery
// of its msgId is between its start and its commit (holding the job's
// lock) waits for it and answers accepted; before, it answered
// not-accepted at once, and the delivery landed after.
func TestReceiptWaitsForADeliveryWriting(t *testing.T) {
	key := "nw"
	h, ctx := withAgent(t, key)
	hr := &heldRunner{release: make(chan struct{})}
	sent := sendAsync(ctx, h.via(t, hr), key, "m1", "held")
	lock := filepath.Join(h.jobs.JobDir(key), "lock")
	waitfor.Eventually(t, "the delivery holds the job's lock", func() bool { return lockHeld(lock) })
	type rc struct {
		r   protocol.Receipt
		err error
	}
	got := make(chan rc, 1)
	go func() {
		r, err := h.jobs.Receipt(ctx, protocol.ReceiptParams{Base: base(key), MsgID: "m1"})
		got <- rc{r, err}
	}()
	// Either the receipt answers while the delivery is held, or it waits
	// for the lock (a flock process waiting on the job's lock).
	var early *rc
	waitfor.Eventually(t, "the receipt answers or waits for the lock", func() bool {
		select {
		case g := <-got:
			early = &g
			return true
		default:
		}
		return lockWaiter(lock)
	})
	close(hr.release)
	if err := <-sent; err != nil {
		t.Fatalf("the held delivery: %v", err)
	}
	if early != nil {
		t.Fatalf("the receipt answered %+v (%v) while the delivery was writing, and the delivery then landed", early.r, early.err)
	}
	g := <-got
	if g.err != nil || g.r.State != protocol.ReceiptAccepted || g.r.Runs == nil || *g.r.Runs != 0 {
		t.Fatalf("the receipt that waited: %+v %v", g.r, g.err)
	}
	if o := h.lastRun(t, key, 0); o.LastText != "agent: held" {
		t.Fatalf("turn 1: %+v", o)
	}
}

// lockHeld reports whether someone holds the lock file.
func lockHeld(lock string) bool { return exec.Command("flock", "-n", lock, "true").Run() != nil }

// lockWaiter reports whether a flock process waits on the lock file (its
// descriptor 9, lib.sh's, points at it).
func lockWaiter(lock string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		p := "/proc/" + e.Name()
		if c, _ := os.ReadFile(p + "/comm"); strings.TrimSpace(string(c)) != "flock" {
			continue
		}
		if l, _ := os.Readlink(p + "/fd/9"); l == lock {
			return true
		}
	}
	return false
}

// TestFenceCoversEveryMsgIDKind: after not-accepted, fresh and interrupt
// with that msgId are refused too; command and answer (no msgId) are not
// concerned. A receipt asked before the job exists fences as well.
func TestFenceCoversEveryMsgIDKind(t *testing.T) {
	h := newHost(t)
	ctx := waitfor.Context(t, 2*time.Minute)
	key := "nk"
	if r := h.receipt(t, key, "early"); r.State != protocol.ReceiptNotAccepted {
		t.Fatalf("receipt before the job: %+v", r)
	}
	h.startAgent(t, key, nil, "")
	if _, err := h.jobs.Send(ctx, protocol.SendParams{Base: base(key), Text: "x", MsgID: "early", Mode: protocol.ModeFollowUp}); kindOf(err) != protocol.Permanent {
		t.Fatalf("send of a msgId fenced before the job started: %v", err)
	}
	for _, m := range []string{"f1", "i1"} {
		if r := h.receipt(t, key, m); r.State != protocol.ReceiptNotAccepted {
			t.Fatalf("receipt %s: %+v", m, r)
		}
	}
	if _, err := h.jobs.Fresh(ctx, protocol.FreshParams{Base: base(key), Text: "x", MsgID: "f1"}); kindOf(err) != protocol.Permanent {
		t.Fatalf("fresh after not-accepted: %v", err)
	}
	if _, err := h.jobs.Interrupt(ctx, protocol.InterruptParams{Base: base(key), Text: "x", MsgID: "i1", TimeoutMs: 1000}); kindOf(err) != protocol.Permanent {
		t.Fatalf("interrupt after not-accepted: %v", err)
	}
	if ids := inboxMsgIDs(t, h, key); len(ids) != 0 {
		t.Fatalf("inbox: %q", ids)
	}
	// A command carries no msgId: no receipt speaks for it.
	if _, err := h.jobs.Command(ctx, protocol.CommandParams{Base: base(key), Name: "compact"}); err != nil {
		t.Fatalf("command: %v", err)
	}
	h.lastRun(t, key, 0)
	if r := h.receipt(t, key, "early"); r.State != protocol.ReceiptNotAccepted {
		t.Fatalf("receipt at the end: %+v", r)
	}
}

// TestReceiptLockBusyIsUnreachable: a receipt that cannot take the job's
// lock within its call's budget answers unreachable, never not-accepted,
// and fences nothing: the delivery still lands once the lock is free.
func TestReceiptLockBusyIsUnreachable(t *testing.T) {
	h := newHost(t)
	key := "nb"
	h.startAgent(t, key, nil, "")
	lock := filepath.Join(h.jobs.JobDir(key), "lock")
	holder := exec.Command("flock", lock, "sh", "-c", "read x")
	in, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	waitfor.Eventually(t, "the test holds the job's lock", func() bool { return lockHeld(lock) })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r, err := h.jobs.Receipt(ctx, protocol.ReceiptParams{Base: base(key), MsgID: "m1"})
	// It answers by itself (its wait fits the call's budget), not cut
	// off by the deadline.
	if err != nil || r.State != protocol.ReceiptUnreachable || r.ID != "m1" || !strings.Contains(r.Reason, "lock is held") {
		t.Fatalf("receipt with the lock held: %+v %v", r, err)
	}
	_ = in.Close()
	_ = holder.Wait()
	h.send(t, key, "m1", "after")
	if r := h.receipt(t, key, "m1"); r.State != protocol.ReceiptAccepted {
		t.Fatalf("receipt after the send: %+v", r)
	}
}
