package tmuxjob_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
)

// BenchmarkStartToBaseline: job.start, then channel.baseline polled until
// the harness reports (mu's readiness), for a harness that writes its state
// at once (the plugin's part: the target) and for the test agent
// (its own start is a dozen forks).
func BenchmarkStartToBaseline(b *testing.B) {
	for _, c := range []struct{ name, cmd string }{{"at-once", atOnce}, {"test-agent", ""}} {
		b.Run(c.name, func(b *testing.B) {
			h := newHost(b, func(o *tmuxjob.Options) { o.Poll = 10 * time.Millisecond })
			cmd := c.cmd
			if cmd == "" {
				cmd = "exec sh " + words.ShQuote(h.agent)
			}
			benchStartToBaseline(b, h, cmd, true)
		})
	}
}

// atOnce is a harness that writes an idle state at once (docs/harness.md:
// written aside, renamed in) and then only waits.
const atOnce = `o=$MU_CHANNEL_DIR/out; printf 'inc=q1\nstate=idle\nsince=1\nruns=0\ncursor=0\n' >"$o/s.tmp" && mv "$o/s.tmp" "$o/state" && exec sleep 1000`

// benchStartToBaseline times, on h, job.start of cmd and channel.baseline
// polled until the harness reports; the stop is not timed.
//
// Of which (per start): start-ms, job.start's own call; polls, the
// channel.baseline calls it took; and, when local (the state file is on
// this machine), state-ms: from the call's beginning to the harness's
// first state (the file's time).
func benchStartToBaseline(b *testing.B, h *host, cmd string, local bool) {
	ctx := waitfor.Context(b, 2*time.Minute)
	var startD, stateD time.Duration
	var polls, n int
	for i := 0; b.Loop(); i++ {
		key := fmt.Sprintf("bs-%d", i)
		t0 := time.Now()
		if _, err := h.jobs.Start(ctx, protocol.JobStartParams{Base: base(key), Key: key, Spec: spec(cmd)}); err != nil {
			b.Fatal(err)
		}
		startD += time.Since(t0)
		for {
			polls++
			bl, err := h.jobs.Baseline(ctx, key)
			if err != nil {
				b.Fatal(err)
			}
			if bl != nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		b.StopTimer()
		if local {
			st, err := os.Stat(filepath.Join(h.jobs.ChannelDir(key), "out", "state"))
			if err != nil {
				b.Fatal(err)
			}
			stateD += st.ModTime().Sub(t0)
		}
		n++
		if err := h.jobs.Stop(ctx, key); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	if n > 0 {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
		b.ReportMetric(ms(startD), "start-ms/op")
		if local {
			b.ReportMetric(ms(stateD), "state-ms/op")
		}
		b.ReportMetric(float64(polls)/float64(n), "polls/op")
	}
}

// BenchmarkSendToSettled: channel.send, then the watch's wait until the
// turn settles, for a turn whose own work is workMs; overhead-ms is the
// time per turn beyond that work.
func BenchmarkSendToSettled(b *testing.B) {
	for _, workMs := range []int{0, 100} {
		b.Run(fmt.Sprintf("work=%dms", workMs), func(b *testing.B) {
			h := newHost(b, func(o *tmuxjob.Options) { o.Poll = 10 * time.Millisecond })
			key := "bt"
			h.startAgent(b, key, nil, "")
			benchTurns(b, h, key, workMs)
		})
	}
}

// BenchmarkAdapterSendToSettled: BenchmarkSendToSettled's turn through
// each adapter, over its CLI's double (docs/harness.md "Test doubles")
// working 0 ms: overhead-ms is the adapter's and the double's own time
// (for claude: the TUI's keys, its hooks, the keeper's nudge), beside the
// test agent's above. The doubles are sh programs, not the real CLIs:
// what the real CLI adds to its turn is not in it.
func BenchmarkAdapterSendToSettled(b *testing.B) {
	for _, c := range append(printCases, claudeTUI) {
		b.Run(c.who+map[bool]string{true: "-print"}[c.harness == "claude-print"], func(b *testing.B) {
			h := newHost(b, func(o *tmuxjob.Options) { o.Poll = 10 * time.Millisecond })
			bin, cwd := filepath.Join(h.root, "bin"), b.TempDir()
			for _, n := range agent.DoubleNames {
				if err := agent.InstallDouble(context.Background(), h.r, n, filepath.Join(bin, n)); err != nil {
					b.Fatal(err)
				}
			}
			seed, _ := json.Marshal(map[string]any{"hasCompletedOnboarding": true, "projects": map[string]any{cwd: map[string]bool{"hasTrustDialogAccepted": true}}})
			if err := os.WriteFile(filepath.Join(h.root, ".claude.json"), seed, 0o600); err != nil {
				b.Fatal(err)
			}
			s := spec(c.cmd)
			s.Harness, s.Cwd = c.harness, cwd
			s.Env = map[string]string{"PATH": bin + ":" + os.Getenv("PATH"), "HOME": h.root}
			key := "ba"
			if _, err := h.jobs.Start(waitfor.Context(b, 2*time.Minute), protocol.JobStartParams{Base: base(key), Key: key, Spec: s}); err != nil {
				b.Fatal(err)
			}
			h.waitBaseline(b, key)
			h.send(b, key, "warm", "warm up [[ms:0]]")
			h.lastRun(b, key, 0)
			benchTurns(b, h, key, 0)
		})
	}
}

// benchTurns times b.Loop's turns of the job key, each working workMs.
func benchTurns(b *testing.B, h *host, key string, workMs int) {
	ctx := waitfor.Context(b, 2*time.Minute)
	st, err := h.jobs.Baseline(ctx, key)
	if err != nil || st == nil {
		b.Fatalf("baseline: %+v %v", st, err)
	}
	runs := st.Runs
	var lag, toSettle time.Duration
	start := time.Now()
	n0 := runs
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		after := runs
		res, wait, err := h.jobs.Watch(ctx, protocol.WatchParams{Base: base(key), AfterRuns: &after})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := h.jobs.Send(ctx, protocol.SendParams{Base: base(key), MsgID: fmt.Sprintf("m%d", i),
			Text: fmt.Sprintf("turn %d [[ms:%d]]", i, workMs), Mode: protocol.ModeFollowUp}); err != nil {
			b.Fatal(err)
		}
		method, n := wait(ctx)
		if method != protocol.NotifyWatchSettled {
			b.Fatalf("watch %s ended with %q", res.WatchID, method)
		}
		settled := time.UnixMilli(n.(protocol.WatchSettled).Observation.Since)
		lag += time.Since(settled)
		toSettle += settled.Sub(t0)
		runs++
	}
	turns := time.Duration(runs - n0)
	per := time.Since(start) / turns
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	work := time.Duration(workMs) * time.Millisecond
	b.ReportMetric(ms(per-work), "overhead-ms/turn")
	// Of which: from the watch and send to the harness's settle (the
	// delivery, the nudge, the harness's own steps), and from the settle
	// to the watch's notification (its polling).
	b.ReportMetric(ms(toSettle/turns-work), "to-settle-ms/turn")
	b.ReportMetric(ms(lag/turns), "watch-lag-ms/turn")
}

// BenchmarkReadStates: one channel read, one Runner round trip.
func BenchmarkReadStates(b *testing.B) {
	key := "br"
	h, ctx := withAgent(b, key)
	p := protocol.ReadStatesParams{Base: base(key), Targets: []protocol.AgentName{{Workstream: "ws", Name: "a1"}}}
	for b.Loop() {
		if _, err := h.jobs.ReadStates(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReceipt: one channel.receipt, under the job's lock: of a
// delivery accepted, and of a msgId never sent (which writes its fence).
func BenchmarkReceipt(b *testing.B) {
	key := "bx"
	h, ctx := withAgent(b, key)
	h.send(b, key, "m1", "one")
	b.Run("accepted", func(b *testing.B) {
		for b.Loop() {
			if r, err := h.jobs.Receipt(ctx, protocol.ReceiptParams{Base: base(key), MsgID: "m1"}); err != nil || r.State != protocol.ReceiptAccepted {
				b.Fatal(r, err)
			}
		}
	})
	b.Run("not-accepted", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if r, err := h.jobs.Receipt(ctx, protocol.ReceiptParams{Base: base(key), MsgID: "n" + strconv.Itoa(i)}); err != nil || r.State != protocol.ReceiptNotAccepted {
				b.Fatal(r, err)
			}
		}
	})
}

// BenchmarkSend: one channel.send on a warm host (the job running, its
// harness idle or busy with the deliveries before): the delivery script's
// run, its lock, the entry written and renamed in, and the nudge.
func BenchmarkSend(b *testing.B) {
	h := newHost(b)
	ctx := waitfor.Context(b, 2*time.Minute)
	key := "bd"
	h.startAgent(b, key, map[string]string{"MU_TEST_AGENT_MS": "0"}, "")
	for i := 0; b.Loop(); i++ {
		if _, err := h.jobs.Send(ctx, protocol.SendParams{Base: base(key), MsgID: fmt.Sprintf("m%d", i),
			Text: "delivered", Mode: protocol.ModeFollowUp}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendBare: BenchmarkSend's delivery to a job whose "harness"
// takes nothing (an idle state written once, the pane a sleep): the
// plugin's part alone, with no turn of an agent's running beside it.
func BenchmarkSendBare(b *testing.B) {
	h := newHost(b)
	ctx := waitfor.Context(b, 2*time.Minute)
	key := "bb"
	h.startBare(b, key)
	h.writeState(b, key, "inc=bb1\nstate=idle\nsince=1\nruns=0\ncursor=0\n")
	for i := 0; b.Loop(); i++ {
		if _, err := h.jobs.Send(ctx, protocol.SendParams{Base: base(key), MsgID: fmt.Sprintf("m%d", i),
			Text: "delivered", Mode: protocol.ModeFollowUp}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWatchWake: the plugin's own part of settle to notification. A
// job whose "harness" is this benchmark: it writes a turn's record and
// renames the state into place (as docs/harness.md asks) while a watch
// waits; wake-ms is from the rename to the watch's notification, at the
// default Options.Poll.
func BenchmarkWatchWake(b *testing.B) {
	h := newHost(b)
	ctx := waitfor.Context(b, 2*time.Minute)
	key := "bw"
	h.startBare(b, key)
	out := filepath.Join(h.jobs.ChannelDir(key), "out")
	state := func(runs int) {
		h.writeState(b, key, fmt.Sprintf("inc=bw1\nstate=idle\nsince=1\nruns=%d\ncursor=0\n", runs))
	}
	state(0)
	var wake time.Duration
	runs := 0
	for b.Loop() {
		after := int64(runs)
		_, wait, err := h.jobs.Watch(ctx, protocol.WatchParams{Base: base(key), AfterRuns: &after})
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan time.Time, 1)
		go func() {
			if m, _ := wait(ctx); m != protocol.NotifyWatchSettled {
				b.Error("watch ended", m)
			}
			done <- time.Now()
		}()
		time.Sleep(50 * time.Millisecond) // the wait run is on the host
		runs++
		rec := fmt.Appendf(nil, "at=1\nmsg=\nerror=\n\nturn %d", runs)
		if err := os.WriteFile(filepath.Join(out, "turns", fmt.Sprintf("bw1.%d", runs)), rec, 0o600); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		state(runs)
		wake += (<-done).Sub(t0)
	}
	b.ReportMetric(float64(wake.Microseconds())/1000/float64(runs), "wake-ms")
}
