package tmuxjob_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
	"github.com/mu-org/mu-plugins/protocol/schemacheck"
)

// wire is a plugin served in this process by protocol.Serve with this
// package's handlers (caller.Config.Local), spoken to line by line through
// caller's raw mode, as mu would.
type wire struct {
	*drive.Raw
	t    *testing.T
	next int
}

func serveJobs(t *testing.T, h *host) *wire {
	t.Helper()
	opts := protocol.Options{Name: "tmuxtest", Version: "0.1.0", Instance: "local",
		Seams:    tmuxjob.Seams("tmux", "tmux-test", nil),
		Handlers: tmuxjob.Handlers(func(context.Context, protocol.Target) (*tmuxjob.Jobs, error) { return h.jobs, nil })}
	w := &wire{Raw: drive.StartRaw(t, caller.Config{Name: "tmuxtest", Local: &opts}), t: t, next: 1}
	t.Cleanup(func() {
		if rep := w.Stop(); rep.Exit != nil {
			t.Errorf("serve: %v", rep.Exit)
		}
	})
	w.call("initialize", map[string]any{"protocol": map[string]int{"min": 1, "max": 1}, "mu": "5"})
	return w
}

type msg struct {
	ID     *int            `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// call sends a request and returns its reply, which must be the next line.
func (w *wire) call(method string, params any) msg {
	w.t.Helper()
	id := w.next
	w.next++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if method != "initialize" {
		pb, _ := json.Marshal(params)
		if err := schemacheck.Params(method, pb); err != nil {
			w.t.Fatalf("%s: the test's params break the schema: %v", method, err)
		}
	}
	w.Send(string(b))
	l := w.Recv()
	var m msg
	if err := json.Unmarshal([]byte(l), &m); err != nil || m.ID == nil || *m.ID != id {
		w.t.Fatalf("%s: want the reply to %d, got %s", method, id, l)
	}
	if m.Error != nil {
		w.t.Fatalf("%s: error %s", method, m.Error)
	}
	check := schemacheck.Result(method, m.Result)
	if method == "initialize" {
		check = schemacheck.Declaration(m.Result)
	}
	if check != nil {
		w.t.Fatalf("%s: the reply breaks the schema: %v\n%s", method, check, m.Result)
	}
	return m
}

func params(key string, extra map[string]any) map[string]any {
	b := base(key)
	p := map[string]any{"deadline": b.Deadline, "target": b.Target}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

func TestWatchSendsExactlyOneNotification(t *testing.T) {
	h := newHost(t)
	w := serveJobs(t, h)
	key := "wj"
	var start protocol.JobStartResult
	m := w.call("job.start", params(key, map[string]any{"key": key, "spec": spec("exec sh " + words.ShQuote(h.agent))}))
	if err := json.Unmarshal(m.Result, &start); err != nil || start.Handle == "" {
		t.Fatalf("job.start: %s", m.Result)
	}
	var b *protocol.Baseline
	waitfor.Eventually(t, "baseline over the wire", func() bool {
		m := w.call("channel.baseline", params(key, nil))
		return string(m.Result) != "null" && json.Unmarshal(m.Result, &b) == nil
	})
	wm := w.call("channel.watch", params(key, map[string]any{"afterRuns": b.Runs, "inc": b.Incarnation}))
	var wr protocol.WatchResult
	if err := json.Unmarshal(wm.Result, &wr); err != nil || wr.WatchID == "" || wr.Initial.Status != protocol.TurnIdle || wr.AfterRuns == nil || *wr.AfterRuns != 0 {
		t.Fatalf("watch reply: %s", wm.Result)
	}
	w.call("channel.send", params(key, map[string]any{"text": "watch me", "msgId": "m1", "mode": "followUp", "force": false, "firstPrompt": false}))
	l := w.Recv()
	var n msg
	if err := json.Unmarshal([]byte(l), &n); err != nil || n.ID != nil || n.Method != protocol.NotifyWatchSettled {
		t.Fatalf("want watch/settled, got %s", l)
	}
	if err := schemacheck.Notification(n.Method, n.Params); err != nil {
		t.Fatalf("notification breaks the schema: %v", err)
	}
	var ws protocol.WatchSettled
	if err := json.Unmarshal(n.Params, &ws); err != nil || ws.WatchID != wr.WatchID || ws.Observation.Runs != 1 || ws.Observation.LastText != "agent: watch me" || !ws.Observation.Settled {
		t.Fatalf("notification: %s", n.Params)
	}
	// Exactly one: a second turn settles, and the next line is still the
	// reply to the next call, not another notification.
	w.call("channel.send", params(key, map[string]any{"text": "again", "msgId": "m2", "mode": "followUp", "force": false, "firstPrompt": false}))
	waitfor.Eventually(t, "turn 2", func() bool {
		return string(w.call("channel.lastRun", params(key, map[string]any{"afterRuns": 1})).Result) != "null"
	})
	time.Sleep(300 * time.Millisecond)
	w.call("job.status", params(key, nil))

	// A watch cancelled by $/cancel sends nothing.
	wm = w.call("channel.watch", params(key, map[string]any{"afterRuns": 2}))
	_ = json.Unmarshal(wm.Result, &wr)
	if in := wr.Initial; in.Status != protocol.TurnIdle || !in.Settled || in.Runs != 2 || in.LastText != "agent: again" {
		t.Fatalf("the watch's initial observation: %+v", in)
	}
	w.Send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancel","params":{"watchId":%q}}`, wr.WatchID))
	w.call("channel.send", params(key, map[string]any{"text": "third", "msgId": "m3", "mode": "followUp", "force": false, "firstPrompt": false}))
	waitfor.Eventually(t, "turn 3", func() bool {
		return string(w.call("channel.lastRun", params(key, map[string]any{"afterRuns": 2})).Result) != "null"
	})
	time.Sleep(300 * time.Millisecond)
	w.call("job.stop", params(key, map[string]any{"key": key}))
}

func TestWatchRestartedOnNewIncarnation(t *testing.T) {
	h := newHost(t)
	w := serveJobs(t, h)
	key := "wr"
	w.call("job.start", params(key, map[string]any{"key": key, "spec": spec("exec sh " + words.ShQuote(h.agent))}))
	b := h.waitBaseline(t, key)
	wm := w.call("channel.watch", params(key, map[string]any{"afterRuns": 0, "inc": b.Incarnation}))
	var wr protocol.WatchResult
	_ = json.Unmarshal(wm.Result, &wr)
	h.send(t, key, "r1", "[[restart]]")
	l := w.Recv()
	var n msg
	if json.Unmarshal([]byte(l), &n) != nil || n.Method != protocol.NotifyWatchRestarted {
		t.Fatalf("want watch/restarted, got %s", l)
	}
	if err := schemacheck.Notification(n.Method, n.Params); err != nil {
		t.Fatalf("notification breaks the schema: %v", err)
	}
	var rs protocol.WatchRestarted
	if err := json.Unmarshal(n.Params, &rs); err != nil || rs.WatchID != wr.WatchID || rs.Incarnation == "" || rs.Incarnation == b.Incarnation {
		t.Fatalf("restarted: %s (old %s)", n.Params, b.Incarnation)
	}
	// The new incarnation counts from 0 and takes the next delivery.
	b2 := h.waitBaseline(t, key)
	if b2.Runs != 0 || b2.Incarnation != rs.Incarnation {
		t.Fatalf("baseline after restart: %+v", b2)
	}
	if s := h.send(t, key, "r2", "after restart"); *s.Baseline != 0 {
		t.Fatalf("send after restart: %+v", s)
	}
	if o := h.lastRun(t, key, 0); o.LastText != "agent: after restart" || o.Incarnation != rs.Incarnation {
		t.Fatalf("turn: %+v", o)
	}
	// A watch on the old incarnation answers restarted at once.
	w.call("channel.watch", params(key, map[string]any{"afterRuns": 0, "inc": b.Incarnation}))
	l = w.Recv()
	if !strings.Contains(l, protocol.NotifyWatchRestarted) {
		t.Fatalf("watch on an old incarnation: %s", l)
	}
	w.call("job.stop", params(key, map[string]any{"key": key}))
}

// Every method over the wire, each reply checked against the schema.
func TestEveryReplyMatchesTheSchema(t *testing.T) {
	h := newHost(t)
	w := serveJobs(t, h)
	key := "sc"
	w.call("job.lookup", params(key, map[string]any{"key": key, "fence": false}))
	w.call("job.start", params(key, map[string]any{"key": key, "spec": spec("exec sh " + words.ShQuote(h.agent))}))
	w.call("job.start", params(key, map[string]any{"key": key, "spec": spec("exec sh " + words.ShQuote(h.agent))}))
	w.call("job.lookup", params(key, map[string]any{"key": key, "fence": true}))
	w.call("job.status", params(key, nil))
	w.call("job.attach", params(key, nil))
	m := w.call("job.checkSteps", params(key, map[string]any{"phase": "reach"}))
	var steps []protocol.Step
	if err := json.Unmarshal(m.Result, &steps); err != nil || len(steps) != 5 { // tmux, tools, state-root, watch, agents
		t.Fatalf("checkSteps: %s", m.Result)
	}
	for _, s := range steps {
		if s.OK != protocol.StepPassed {
			t.Fatalf("check step failed on this machine: %s", m.Result)
		}
	}
	h.waitBaseline(t, key)
	w.call("channel.baseline", params(key, nil))
	w.call("channel.readStates", params(key, map[string]any{"targets": []protocol.AgentName{{Workstream: "ws", Name: "a1"}}}))
	w.call("channel.receipt", params(key, map[string]any{"msgId": "x"}))
	w.call("channel.send", params(key, map[string]any{"text": "q [[block:ok]] [[ms:3000]]", "msgId": "s1", "mode": "followUp", "force": false, "firstPrompt": false}))
	waitfor.Eventually(t, "blocked", func() bool { return h.reading(t, key).State == protocol.TurnBlocked })
	w.call("channel.readStates", params(key, map[string]any{"targets": []protocol.AgentName{{Workstream: "ws", Name: "a1"}}}))
	w.call("channel.watch", params(key, nil))
	w.call("channel.answer", params(key, map[string]any{"keys": []string{"1"}, "force": false}))
	if l := w.Recv(); schemacheck.Message([]byte(l)) != nil {
		t.Fatalf("the watch's notification: %s", l)
	}
	w.call("channel.receipt", params(key, map[string]any{"msgId": "s1"}))
	w.call("channel.lastRun", params(key, map[string]any{"afterRuns": 0}))
	w.call("channel.lastRun", params(key, map[string]any{"afterRuns": 5}))
	w.call("channel.command", params(key, map[string]any{"name": "compact", "force": false}))
	w.call("channel.fresh", params(key, map[string]any{"text": "f", "msgId": "f1", "force": false}))
	w.call("channel.interrupt", params(key, map[string]any{"text": "i", "msgId": "i1", "timeoutMs": 10000}))
	w.call("channel.abort", params(key, map[string]any{"timeoutMs": 10000}))
	w.call("job.stop", params(key, map[string]any{"key": key}))
	w.call("job.stop", params(key, map[string]any{"key": key}))
	w.call("job.status", params(key, nil))
}

// A watch outlives many of its host-side wait runs (each at most 100 looks).
func TestWatchSpansManyWaitRuns(t *testing.T) {
	h := newHost(t, func(o *tmuxjob.Options) { o.Poll = 5 * time.Millisecond }) // a run: ~0.5 s
	key := "long"
	ctx := watchFirstTurn(t, h, key, "slow [[ms:2500]]")
	// A cancelled watch returns nothing.
	cctx, cancel := context.WithCancel(ctx)
	one := int64(1)
	_, run, _ := h.jobs.Watch(ctx, protocol.WatchParams{Base: base(key), AfterRuns: &one})
	cancel()
	if method, _ := run(cctx); method != "" {
		t.Fatalf("a cancelled watch notified %s", method)
	}
}

// The watch wakes on tail's stderr too: polling (a FUSE root, as in
// Docker's fuse-overlayfs), GNU tail says the state "has been replaced" one
// look before it prints the new file. Here the only tail on PATH polls as
// it does there (---disable-inotify) and its stdout goes nowhere, and each
// wait run's bound (100 looks of a minute) outlasts the test: the watch
// settles only if that message wakes it.
func TestWatchWakesOnTailsStderr(t *testing.T) {
	real, err := exec.LookPath("tail")
	if err != nil {
		t.Skip("no tail")
	}
	shim := "case $1 in --version) exec " + words.ShQuote(real) + " \"$@\" ;; esac\nexec " + words.ShQuote(real) + " ---disable-inotify \"$@\" >/dev/null\n"
	h := newHostOn(t, shimmed(t, "tail", shim), func(o *tmuxjob.Options) { o.Poll = time.Minute })
	watchFirstTurn(t, h, "quiet", "hi [[ms:300]]")
}

// watchFirstTurn starts the test agent as job key on h, watches for its
// first turn, sends text and wants the watch settled with the agent's
// answer; it returns the test's context.
func watchFirstTurn(t *testing.T, h *host, key, text string) context.Context {
	t.Helper()
	h.startAgent(t, key, nil, "")
	ctx := waitfor.Context(t, 2*time.Minute)
	zero := int64(0)
	_, run, err := h.jobs.Watch(ctx, protocol.WatchParams{Base: base(key), AfterRuns: &zero})
	if err != nil {
		t.Fatal(err)
	}
	h.send(t, key, "m1", text)
	if method, p := run(ctx); method != protocol.NotifyWatchSettled || p.(protocol.WatchSettled).Observation.LastText != "agent: "+text {
		t.Fatalf("%s %+v", method, p)
	}
	return ctx
}
