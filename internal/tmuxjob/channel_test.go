package tmuxjob_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

func TestSendBusySettledRunsDense(t *testing.T) {
	key := "c1"
	h, ctx := withAgent(t, key)
	b, _ := h.jobs.Baseline(ctx, key)
	if b.Runs != 0 || b.Incarnation == "" {
		t.Fatalf("baseline: %+v", b)
	}
	r := h.reading(t, key)
	if r.State != protocol.TurnIdle || r.Runs != 0 || r.Incarnation != b.Incarnation {
		t.Fatalf("reading: %+v", r)
	}
	// Another agent's reading is not this job's: left out.
	m, _ := h.jobs.ReadStates(ctx, protocol.ReadStatesParams{Base: base(key), Targets: []protocol.AgentName{{Workstream: "ws", Name: "other"}}})
	if len(m) != 0 {
		t.Fatalf("reading for another agent: %v", m)
	}

	s1 := h.send(t, key, "m1", "first [[ms:1500]]")
	if s1.Ack != protocol.AckConfirmed || s1.Channel != "tmux-test" || s1.MsgID != "m1" || s1.Baseline == nil || *s1.Baseline != 0 {
		t.Fatalf("send 1: %+v", s1)
	}
	waitfor.Eventually(t, "busy", func() bool { return h.reading(t, key).State == protocol.TurnBusy })
	// Two more queue behind the turn in progress: baselines 1 and 2.
	s2 := h.send(t, key, "m2", "second")
	s3 := h.send(t, key, "m3", "third")
	if *s2.Baseline != 1 || *s3.Baseline != 2 {
		t.Fatalf("queued baselines: %d %d", *s2.Baseline, *s3.Baseline)
	}
	for i, want := range []string{"agent: first [[ms:1500]]", "agent: second", "agent: third"} {
		o := h.lastRun(t, key, int64(i))
		if o.Runs != int64(i+1) || !o.Settled || o.Status != protocol.TurnIdle || o.LastText != want || o.Incarnation != b.Incarnation || o.LastError != "" {
			t.Fatalf("turn %d: %+v", i+1, o)
		}
	}
	waitfor.Eventually(t, "idle at runs 3", func() bool { r := h.reading(t, key); return r.State == protocol.TurnIdle && r.Runs == 3 })
	// lastRun past the last settled turn: nothing yet.
	if o, err := h.jobs.LastRun(ctx, protocol.LastRunParams{Base: base(key), AfterRuns: 3}); err != nil || o != nil {
		t.Fatalf("lastRun 3: %+v %v", o, err)
	}
	// A delivery after the queue drained: baseline 3.
	if s := h.send(t, key, "m4", "fourth"); *s.Baseline != 3 {
		t.Fatalf("send 4: %+v", s)
	}
	h.lastRun(t, key, 3)
}

func TestReceiptExactAndResendDeduped(t *testing.T) {
	key := "c2"
	h, ctx := withAgent(t, key)
	// A msgId never sent is not accepted (and, final, never will be:
	// TestNotAcceptedIsFinal).
	r, err := h.jobs.Receipt(ctx, protocol.ReceiptParams{Base: base(key), MsgID: "m0"})
	if err != nil || r.State != protocol.ReceiptNotAccepted || r.ID != "m0" {
		t.Fatalf("receipt of a msgId never sent: %+v %v", r, err)
	}
	s1 := h.send(t, key, "m1", "once [[ms:800]]")
	r, err = h.jobs.Receipt(ctx, protocol.ReceiptParams{Base: base(key), MsgID: "m1"})
	if err != nil || r.State != protocol.ReceiptAccepted || r.ID != "m1" || r.Runs == nil || *r.Runs != 0 || r.At == nil || r.Incarnation == "" {
		t.Fatalf("receipt after: %+v %v", r, err)
	}
	// A resend of the accepted msgId (even with other text) delivers nothing.
	s2 := h.send(t, key, "m1", "once [[ms:800]]")
	if *s2.Baseline != *s1.Baseline || s2.MsgID != "m1" {
		t.Fatalf("resend: %+v, first %+v", s2, s1)
	}
	h.lastRun(t, key, 0)
	s3 := h.send(t, key, "m1", "once [[ms:800]]")
	if *s3.Baseline != 0 {
		t.Fatalf("resend after settle: %+v", s3)
	}
	h.send(t, key, "m2", "next")
	o := h.lastRun(t, key, 1)
	if o.LastText != "agent: next" {
		t.Fatalf("turn 2 is %q: m1 was delivered twice?", o.LastText)
	}
	ents := queued(t, filepath.Join(h.jobs.ChannelDir(key), "inbox"))
	if len(ents) != 2 {
		t.Fatalf("inbox holds %d deliveries, want 2", len(ents))
	}
}

// dropRunner runs every script but loses the answer of the first one whose
// argv mentions op: the plugin killed between writing and answering.
type dropRunner struct {
	tmuxjob.Runner
	drop string
	done bool
}

func (d *dropRunner) Run(ctx context.Context, argv []string, stdin []byte) ([]byte, []byte, int, error) {
	o, e, c, err := d.Runner.Run(ctx, argv, stdin)
	if !d.done && len(argv) > 7 && argv[7] == d.drop {
		d.done = true
		return nil, nil, -1, errors.New("the plugin died before it could answer")
	}
	return o, e, c, err
}

func TestDeliveryResolvedByReceiptAfterLostAnswer(t *testing.T) {
	key := "c3"
	h, ctx := withAgent(t, key)
	j2 := h.via(t, &dropRunner{Runner: tmuxjob.LocalRunner{}, drop: "send"})
	_, err := j2.Send(ctx, protocol.SendParams{Base: base(key), Text: "lost answer", MsgID: "m1", Mode: protocol.ModeFollowUp})
	if kindOf(err) != protocol.UnknownOutcome {
		t.Fatalf("send whose answer was lost: %v", err)
	}
	r, err := h.jobs.Receipt(ctx, protocol.ReceiptParams{Base: base(key), MsgID: "m1"})
	if err != nil || r.State != protocol.ReceiptAccepted || *r.Runs != 0 {
		t.Fatalf("receipt: %+v %v", r, err)
	}
	if o := h.lastRun(t, key, 0); o.LastText != "agent: lost answer" {
		t.Fatalf("turn: %+v", o)
	}
}

func TestBlockedThenAnswered(t *testing.T) {
	key := "c4"
	h, ctx := withAgent(t, key)
	// Nothing pending: an answer is refused, unless forced.
	if _, err := h.jobs.Answer(ctx, protocol.AnswerParams{Base: base(key), Keys: []string{"y"}}); kindOf(err) != protocol.Permanent {
		t.Fatalf("answer with nothing pending: %v", err)
	}
	h.send(t, key, "m1", "do it [[block:proceed]] [[ms:200]]")
	var r protocol.Reading
	waitfor.Eventually(t, "blocked", func() bool { r = h.reading(t, key); return r.State == protocol.TurnBlocked })
	if r.Pending != "proceed" || r.Runs != 0 {
		t.Fatalf("blocked reading: %+v", r)
	}
	a, err := h.jobs.Answer(ctx, protocol.AnswerParams{Base: base(key), Keys: []string{"y", "Enter"}})
	if err != nil || a.Ack != protocol.AckConfirmed || len(a.Keys) != 2 {
		t.Fatalf("answer: %+v %v", a, err)
	}
	// Its resend (the same keys, at once) answers nothing twice.
	if a, err := h.jobs.Answer(ctx, protocol.AnswerParams{Base: base(key), Keys: []string{"y", "Enter"}}); err != nil || a.Ack != protocol.AckConfirmed {
		t.Fatalf("answer resend: %+v %v", a, err)
	}
	o := h.lastRun(t, key, 0)
	if o.LastText != "agent: do it [[block:proceed]] [[ms:200]]" || o.LastError != "" {
		t.Fatalf("turn: %+v", o)
	}
	answers := func() int {
		return len(queued(t, filepath.Join(h.jobs.ChannelDir(key), "answers")))
	}
	if n := answers(); n != 1 {
		t.Fatalf("%d answers written, want 1", n)
	}
	// The same keys for a new dialog are a new answer.
	h.send(t, key, "m2", "again [[block:second]]")
	waitfor.Eventually(t, "blocked again", func() bool { r = h.reading(t, key); return r.State == protocol.TurnBlocked && r.Pending == "second" })
	if _, err := h.jobs.Answer(ctx, protocol.AnswerParams{Base: base(key), Keys: []string{"y", "Enter"}}); err != nil {
		t.Fatalf("answer to the second dialog: %v", err)
	}
	h.lastRun(t, key, 1)
	if _, err := h.jobs.Answer(ctx, protocol.AnswerParams{Base: base(key), Keys: []string{"n"}, Force: true}); err != nil {
		t.Fatalf("forced answer: %v", err)
	}
	if n := answers(); n != 3 {
		t.Fatalf("%d answers written, want 3", n)
	}
}

func TestInterruptAndAbort(t *testing.T) {
	key := "c5"
	h, ctx := withAgent(t, key)
	h.send(t, key, "m1", "long [[ms:600000]]")
	waitfor.Eventually(t, "busy", func() bool { return h.reading(t, key).State == protocol.TurnBusy })
	ir, err := h.jobs.Interrupt(ctx, protocol.InterruptParams{Base: base(key), Text: "instead, this", MsgID: "i1", TimeoutMs: 30000})
	if err != nil || !ir.WasBusy || ir.Pending || ir.MsgID != "i1" || ir.Runs == nil || *ir.Runs != 1 {
		t.Fatalf("interrupt: %+v %v", ir, err)
	}
	o := h.lastRun(t, key, 0)
	if o.LastError != "interrupted" {
		t.Fatalf("the interrupted turn: %+v", o)
	}
	if o := h.lastRun(t, key, 1); o.LastText != "agent: instead, this" {
		t.Fatalf("the interrupt's turn: %+v", o)
	}
	// An interrupt's resend interrupts nothing again: the turn the first
	// one started runs to its end.
	h.send(t, key, "m1b", "long [[ms:600000]]")
	waitfor.Eventually(t, "busy", func() bool { return h.reading(t, key).State == protocol.TurnBusy })
	ip := protocol.InterruptParams{Base: base(key), Text: "then this [[ms:1500]]", MsgID: "i2", TimeoutMs: 30000}
	if _, err := h.jobs.Interrupt(ctx, ip); err != nil {
		t.Fatal(err)
	}
	waitfor.Eventually(t, "the interrupt's turn", func() bool { r := h.reading(t, key); return r.State == protocol.TurnBusy && r.Runs == 3 })
	if ir, err := h.jobs.Interrupt(ctx, ip); err != nil || ir.Pending || ir.WasBusy {
		t.Fatalf("interrupt resend: %+v %v", ir, err)
	}
	if o := h.lastRun(t, key, 3); o.LastError != "" || o.LastText != "agent: then this [[ms:1500]]" {
		t.Fatalf("the resent interrupt cut its own turn: %+v", o)
	}
	// Abort: idle first (nothing to cut), then a turn in progress.
	ab, err := h.jobs.Abort(ctx, protocol.AbortParams{Base: base(key), TimeoutMs: 1000})
	if err != nil || ab.Before != protocol.TurnIdle || ab.After != protocol.TurnIdle || ab.Aborted || ab.Pending {
		t.Fatalf("abort when idle: %+v %v", ab, err)
	}
	h.send(t, key, "m2", "long again [[ms:600000]]")
	waitfor.Eventually(t, "busy", func() bool { return h.reading(t, key).State == protocol.TurnBusy })
	ab, err = h.jobs.Abort(ctx, protocol.AbortParams{Base: base(key), TimeoutMs: 30000})
	if err != nil || ab.Before != protocol.TurnBusy || ab.After != protocol.TurnIdle || !ab.Settled || !ab.Aborted || ab.Pending {
		t.Fatalf("abort: %+v %v", ab, err)
	}
	if o := h.lastRun(t, key, 4); o.LastError != "interrupted" || o.Runs != 5 {
		t.Fatalf("the aborted turn: %+v", o)
	}
}

func TestHostileTextDeliveredVerbatim(t *testing.T) {
	h := newHost(t)
	key := "c6"
	h.startAgent(t, key, nil, "")
	texts := []string{
		"it's \"quoted\" and 'single' \\ back\\slash",
		"line one\nline two\n\nline four\n",
		"$(rm -rf /) `rm -rf /` ${HOME} $((1+1)) ; && || | > /tmp/x < /etc/passwd &",
		"control: \x01\x02\x03 esc \x1b[31mred\x1b[0m bell \x07 del \x7f cr \r tab \t C-c \x03 C-d \x04",
		"-n leading dash; unicode ünïcødé 日本語 🙂; NUL \x00 inside",
		"mu:inbox\n", // the nudge token itself
	}
	for i, text := range texts {
		id := "h" + string(rune('a'+i))
		h.send(t, key, id, text)
		o := h.lastRun(t, key, int64(i))
		if o.LastText != "agent: "+strings.ToValidUTF8(text, "\uFFFD") {
			t.Fatalf("text %d came back as %q", i, o.LastText)
		}
		// The delivery's file holds the text byte for byte.
		ents := queued(t, filepath.Join(h.jobs.ChannelDir(key), "inbox"))
		b, err := os.ReadFile(filepath.Join(h.jobs.ChannelDir(key), "inbox", ents[i], "text"))
		if err != nil || string(b) != text {
			t.Fatalf("delivery %d on disk: %q %v", i, b, err)
		}
	}
	if _, err := os.Stat("/tmp/x"); err == nil {
		t.Log("note: /tmp/x exists (not necessarily ours)")
	}
	if st, _ := h.jobs.Status(waitfor.Context(t, 2*time.Minute), key); st.State != protocol.JobRunning {
		t.Fatalf("the agent did not survive the texts: %+v", st)
	}
}

func TestCommandFreshExpectIncarnationAndCommit(t *testing.T) {
	h := newHost(t)
	ctx := waitfor.Context(t, 2*time.Minute)
	key := "c7"
	repo := filepath.Join(h.root, "repo")
	for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	h.startAgent(t, key, nil, repo)
	c, err := h.jobs.Command(ctx, protocol.CommandParams{Base: base(key), Name: "compact", Instructions: "keep the plan"})
	if err != nil || c.Ack != protocol.AckConfirmed || *c.Baseline != 0 {
		t.Fatalf("command: %+v %v", c, err)
	}
	// The same command again right away is its resend: nothing twice.
	c2, err := h.jobs.Command(ctx, protocol.CommandParams{Base: base(key), Name: "compact", Instructions: "keep the plan"})
	if err != nil || *c2.Baseline != 0 {
		t.Fatalf("command resend: %+v %v", c2, err)
	}
	if o := h.lastRun(t, key, 0); o.LastText != "agent: /compact keep the plan" {
		t.Fatalf("command turn: %+v", o)
	}
	f, err := h.jobs.Fresh(ctx, protocol.FreshParams{Base: base(key), Text: "start over [[commit]]", MsgID: "f1"})
	if err != nil || *f.Baseline != 1 {
		t.Fatalf("fresh: %+v %v", f, err)
	}
	o := h.lastRun(t, key, 1)
	if o.LastText != "agent: start over [[commit]]" {
		t.Fatalf("fresh turn: %+v", o)
	}
	out, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%an %s").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "mu-test-agent mu-test-agent: turn 2") {
		t.Fatalf("the agent's commit: %q %v", out, err)
	}
	b := h.waitBaseline(t, key)
	_, err = h.jobs.Send(ctx, protocol.SendParams{Base: base(key), Text: "x", MsgID: "m9", Mode: protocol.ModeFollowUp, ExpectIncarnation: b.Incarnation + "-old"})
	if kindOf(err) != protocol.Permanent {
		t.Fatalf("send to another incarnation: %v", err)
	}
	if r, _ := h.jobs.Receipt(ctx, protocol.ReceiptParams{Base: base(key), MsgID: "m9"}); r.State != protocol.ReceiptNotAccepted {
		t.Fatalf("the refused send was accepted: %+v", r)
	}
	if _, err := h.jobs.Send(ctx, protocol.SendParams{Base: base(key), Text: "x", MsgID: "m10", Mode: protocol.ModeSteer}); kindOf(err) != protocol.Permanent {
		t.Fatalf("steer: %v", err)
	}
}

// A spare entry directory that a killed delivery left half written (a
// stale dialog, a text) is never taken for a delivery: each one is written
// into an empty directory, and every spare left holds nothing.
func TestHalfWrittenSpareIsNotTaken(t *testing.T) {
	h := newHost(t)
	key := "hs"
	h.startAgent(t, key, map[string]string{"MU_TEST_AGENT_MS": "0"}, "")
	h.waitBaseline(t, key)
	inbox := filepath.Join(h.jobs.ChannelDir(key), "inbox")
	for i := range 20 {
		stale := filepath.Join(inbox, fmt.Sprintf(".spare.1.%d", i))
		if err := os.Mkdir(stale, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"dialog", "text"} {
			if err := os.WriteFile(filepath.Join(stale, f), []byte("stale"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 3 {
		h.send(t, key, fmt.Sprintf("s%d", i), fmt.Sprintf("fresh %d", i))
	}
	ents := queued(t, inbox)
	for i, e := range ents {
		if b, err := os.ReadFile(filepath.Join(inbox, e, "text")); err != nil || string(b) != fmt.Sprintf("fresh %d", i) {
			t.Fatalf("delivery %s: text %q %v", e, b, err)
		}
		if _, err := os.Stat(filepath.Join(inbox, e, "dialog")); err == nil {
			t.Fatalf("delivery %s holds a stale dialog", e)
		}
	}
	all, _ := os.ReadDir(inbox)
	for _, e := range all {
		if sub, _ := os.ReadDir(filepath.Join(inbox, e.Name())); strings.HasPrefix(e.Name(), ".") && len(sub) > 0 {
			t.Fatalf("a spare taken half written is still there: %s", e.Name())
		}
	}
	if len(ents) != 3 {
		t.Fatalf("%d deliveries, want 3", len(ents))
	}
}

// A delivery whose nudge never came (the plugin died between the rename
// and the nudge, and no receipt was asked) is still taken: the harness
// looks at its inbox on its own too.
func TestDeliveryWithoutNudgeIsTaken(t *testing.T) {
	h := newHost(t)
	key := "nn"
	h.startAgent(t, key, map[string]string{"MU_TEST_AGENT_POLL_S": "1"}, "")
	b := h.waitBaseline(t, key)
	inbox := filepath.Join(h.jobs.ChannelDir(key), "inbox")
	tmp := filepath.Join(inbox, ".tmp.by-hand")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"kind": "send", "text": "no nudge", "msgid": "hand", "mode": "followUp",
		"name": "", "at": "1", "baseline": "0", "inc": b.Incarnation} {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(tmp, filepath.Join(inbox, "0000000001.0123456789abcdef0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	if o := h.lastRun(t, key, 0); o.LastText != "agent: no nudge" {
		t.Fatalf("turn: %+v", o)
	}
}

// A turn of an earlier incarnation that did settle is not answered:
// lastRun of that incarnation is null, and a watch on it ends
// watch/restarted naming the current one (docs/protocol.md, "the settled
// turn past afterRuns").
func TestEarlierIncarnationSettledTurnIsNotAnswered(t *testing.T) {
	key := "ei"
	h, ctx := withAgent(t, key)
	b := h.waitBaseline(t, key)
	h.send(t, key, "s1", "settles [[ms:10]]")
	if o := h.lastRun(t, key, 0); o.Incarnation != b.Incarnation {
		t.Fatalf("turn 1: %+v", o)
	}
	h.send(t, key, "r1", "[[restart]]")
	var now *protocol.Baseline
	waitfor.Eventually(t, "a new incarnation", func() bool {
		now = h.waitBaseline(t, key)
		return now.Incarnation != b.Incarnation
	})
	o, err := h.jobs.LastRun(ctx, protocol.LastRunParams{Base: base(key), AfterRuns: 0, Inc: b.Incarnation})
	if err != nil || o != nil {
		t.Fatalf("lastRun of the earlier incarnation's settled turn: %+v %v, want null", o, err)
	}
	zero := int64(0)
	_, wait, err := h.jobs.Watch(ctx, protocol.WatchParams{Base: base(key), AfterRuns: &zero, Inc: b.Incarnation})
	if err != nil {
		t.Fatal(err)
	}
	method, params := wait(ctx)
	rs, ok := params.(protocol.WatchRestarted)
	if method != protocol.NotifyWatchRestarted || !ok || rs.Incarnation != now.Incarnation {
		t.Fatalf("watch on the earlier incarnation: %s %+v, want watch/restarted naming %s", method, params, now.Incarnation)
	}
}

// A delivery to a job whose session is gone (the tmux server killed under
// it) is refused, nothing written: the liveness the delivery reads off the
// wrapper's own record (no tmux client) says so as tmux would, once the
// pane's process has died of the hangup (a delivery in that instant is one
// that came just before the death, as with tmux's own answer).
func TestSendRefusedOnceTheSessionIsGone(t *testing.T) {
	key := "sg"
	h, ctx := withAgent(t, key)
	h.send(t, key, "m1", "alive")
	if err := exec.Command("tmux", "-S", filepath.Join(h.root, "tmux.sock"), "kill-server").Run(); err != nil {
		t.Fatal(err)
	}
	var msg string
	for i := 0; ; i++ {
		msg = fmt.Sprintf("late-%d", i)
		_, err := h.jobs.Send(ctx, protocol.SendParams{Base: base(key), Text: "late", MsgID: msg, Mode: protocol.ModeFollowUp})
		if kindOf(err) == protocol.Permanent && strings.Contains(err.Error(), "not running") {
			break
		}
		if err != nil || i > 1000 {
			t.Fatalf("send %d to a job whose session is gone: %v", i, err)
		}
	}
	if r, _ := h.jobs.Receipt(ctx, protocol.ReceiptParams{Base: base(key), MsgID: msg}); r.State != protocol.ReceiptNotAccepted {
		t.Fatalf("the refused send was accepted: %+v", r)
	}
}
