//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
	"github.com/mu-org/mu-plugins/protocol/caller/replay"
)

// drill is what a kill drill's trials share: the environment, the plugin's
// spec, a long-lived plugin for set-up and clean-up calls, the journal, and
// the run's tag for its keys.
type drill struct {
	e   *Env
	s   spec
	p   *started
	j   *replay.Journal
	run string
}

func newDrill(t *testing.T) *drill {
	e := getEnv(t)
	d := &drill{e: e, s: e.drillDocker(), run: words.RandHex(4)}
	var err error
	if d.j, err = replay.Open(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	d.p = startPlugin(t, d.s)
	return d
}

// jobDrill is one host shared by a drill's trials: a docker host
// (newJobDrill) or an SSH host (newSSHJobDrill).
type jobDrill struct {
	*drill
	host  protocol.Target
	kind  string                                    // the job seam's kind
	agent string                                    // the test agent's path on the host
	count counter                                   // the host's agents and deliveries
	inbox func(ctx context.Context) (string, error) // every msgid in the host's inboxes, a line each, then "end"
}

func newJobDrill(t *testing.T) *jobDrill {
	d := &jobDrill{drill: newDrill(t), kind: "docker", agent: agentPath}
	d.host = acquireHost(t, d.p, "jobs-"+d.run)
	ctr := d.host.Host.Handle
	d.count = countInCtr(ctr)
	d.inbox = func(ctx context.Context) (string, error) {
		return dockerRetry(ctx, "exec", ctr, "sh", "-c", `for f in "$1"/jobs/*/chan/inbox/*/msgid; do [ -f "$f" ] && { cat "$f"; echo; }; done; echo end`, "sh", jobsRoot)
	}
	return d
}

func (d *jobDrill) startParams(key, name string) protocol.JobStartParams {
	sp := agentSpec(name, key, ".", 50)
	sp.Cmd = "exec sh " + d.agent
	return protocol.JobStartParams{Base: protocol.Base{Target: d.host}, Key: key, Spec: sp}
}

// target names the job key and its agent.
func (d *jobDrill) target(key, handle, name string) protocol.Target {
	return drive.JobTarget(d.host, d.kind, key, handle, "it", name)
}

func (d *jobDrill) stopParams(key, name string) protocol.KeyParams {
	return protocol.KeyParams{Base: protocol.Base{Target: d.target(key, "", name)}, Key: key}
}

// agents waits (bounded) for the key's agent process count to settle at
// want, and returns what it found.
func (d *jobDrill) agents(key string, want int) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return settleCount(ctx, d.count, "job", key, want)
}

// TestDrillKillJobStart: job.start SIGKILLed at random points; once
// resolved (a fenced job.lookup), a found start runs exactly one agent for
// its key, a none runs none.
func TestDrillKillJobStart(t *testing.T) { drillKillJobStart(t, newJobDrill(t), "kill-job.start") }

func drillKillJobStart(t *testing.T, d *jobDrill, name string) {
	span := measureSpan(t, 3, d.s, d.j, func(i int) (effectCall, func() error, error) {
		key, name := fmt.Sprintf("probe-%s-%d", d.run, i), fmt.Sprintf("probe%d", i)
		return effectCall{protocol.MethodJobStart.Name, key, d.startParams(key, name)}, func() error {
			_, err := caller.Invoke(waitfor.Context(t, time.Minute), d.p, protocol.MethodJobStop, d.stopParams(key, name))
			return err
		}, nil
	})
	runDrill(t, name, 4, span, func(t *testing.T, i int, killAfter time.Duration) (string, bool) {
		key, name := fmt.Sprintf("js-%s-%d", d.run, i), fmt.Sprintf("a%d", i)
		out, err := killAndResolve(t, d.s, d.j, effectCall{protocol.MethodJobStart.Name, key, d.startParams(key, name)}, killAfter)
		if err != nil {
			t.Errorf("%s: %v", key, err)
			return "error", false
		}
		want := 0
		switch out.how {
		case "answered", string(replay.Found):
			var res protocol.JobStartResult
			if err := json.Unmarshal(out.result, &res); err != nil || res.Handle == "" {
				t.Errorf("%s: %s without a handle: %s", key, out.how, out.result)
				return out.how, false
			}
			want = 1
		case string(replay.None), "not-sent":
		default:
			t.Errorf("%s: resolved %s", key, out.how)
			return out.how, false
		}
		good := true
		if n, err := d.agents(key, want); err != nil {
			t.Errorf("%s: %s, and %v", key, out.how, err)
			good = false
		} else if n != want {
			good = false
		}
		if _, err := caller.Invoke(waitfor.Context(t, time.Minute), d.p, protocol.MethodJobStop, d.stopParams(key, name)); err != nil {
			t.Errorf("%s: job.stop: %v", key, err)
			good = false
		}
		return out.how, good
	})
}

// TestDrillKillJobStop: job.stop SIGKILLed at random points; once
// reissued by the replay rules, no agent of the key runs and the job reads
// ended.
func TestDrillKillJobStop(t *testing.T) { drillKillJobStop(t, newJobDrill(t), "kill-job.stop") }

func drillKillJobStop(t *testing.T, d *jobDrill, name string) {
	span := measureSpan(t, 3, d.s, d.j, func(i int) (effectCall, func() error, error) {
		key, name := fmt.Sprintf("probe-%s-%d", d.run, i), fmt.Sprintf("probe%d", i)
		if _, err := caller.Invoke(waitfor.Context(t, time.Minute), d.p, protocol.MethodJobStart, d.startParams(key, name)); err != nil {
			return effectCall{}, nil, err
		}
		_, err := d.agents(key, 1)
		return effectCall{protocol.MethodJobStop.Name, key, d.stopParams(key, name)}, nil, err
	})
	runDrill(t, name, 4, span, func(t *testing.T, i int, killAfter time.Duration) (string, bool) {
		key, name := fmt.Sprintf("jx-%s-%d", d.run, i), fmt.Sprintf("b%d", i)
		if _, err := caller.Invoke(waitfor.Context(t, time.Minute), d.p, protocol.MethodJobStart, d.startParams(key, name)); err != nil {
			t.Errorf("%s: job.start: %v", key, err)
			return "error", false
		}
		if _, err := d.agents(key, 1); err != nil {
			t.Errorf("%s: the started job: %v", key, err)
			return "error", false
		}
		out, err := killAndResolve(t, d.s, d.j, effectCall{protocol.MethodJobStop.Name, key, d.stopParams(key, name)}, killAfter)
		if err != nil {
			t.Errorf("%s: %v", key, err)
			return "error", false
		}
		switch out.how {
		case "answered", string(replay.Done):
		case "not-sent": // never written: the job runs on; stop it now
			if n, err := d.agents(key, 1); err != nil || n != 1 {
				t.Errorf("%s: stop never sent, and %v", key, err)
				return out.how, false
			}
			if _, err := caller.Invoke(waitfor.Context(t, time.Minute), d.p, protocol.MethodJobStop, d.stopParams(key, name)); err != nil {
				t.Errorf("%s: job.stop: %v", key, err)
				return out.how, false
			}
		default:
			t.Errorf("%s: resolved %s, want done", key, out.how)
			return out.how, false
		}
		good := true
		if _, err := d.agents(key, 0); err != nil {
			t.Errorf("%s: stopped (%s), and %v", key, out.how, err)
			good = false
		}
		st, err := caller.Invoke(waitfor.Context(t, time.Minute), d.p, protocol.MethodJobStatus, protocol.Base{Target: d.target(key, "", name)})
		if err != nil || st.State != protocol.JobEnded {
			t.Errorf("%s: stopped (%s), and job.status %+v %v", key, out.how, st, err)
			good = false
		}
		return out.how, good
	})
}

// lateRunBound is how long a delivery's run can outlive its SIGKILLed
// plugin in the container (the Engine does not stop an exec when its
// client goes): lib.sh's lock wait (20 s), and a margin.
const lateRunBound = 25 * time.Second

// TestDrillKillChannelSend: channel.send SIGKILLed at random points, all
// to one agent; resolved as mu resolves it (an exact receipt, asked again
// while unreachable): accepted → exactly one inbox delivery with the
// msgId; not-accepted (or never sent) → zero, and mu sends nothing again
// (only accepted resolves; the intent stays). Not-accepted is final: once
// every trial has ended and lateRunBound has passed since the last one,
// no such msgId is in the inbox and its receipt still says not-accepted.
func TestDrillKillChannelSend(t *testing.T) {
	drillKillChannelSend(t, newJobDrill(t), "kill-channel.send")
}

func drillKillChannelSend(t *testing.T, d *jobDrill, drill string) {
	key, name := "chan-"+d.run, "chan"
	res, err := caller.Invoke(waitfor.Context(t, time.Minute), d.p, protocol.MethodJobStart, d.startParams(key, name))
	if err != nil {
		t.Fatal(err)
	}
	jt := d.target(key, res.Handle, name)
	drive.Baseline(t, waitfor.Context(t, time.Minute), d.p.Plugin, jt)
	send := func(msgID string) protocol.SendParams {
		return protocol.SendParams{Base: protocol.Base{Target: jt}, Text: "drill " + msgID, MsgID: msgID, Mode: protocol.ModeFollowUp}
	}
	span := measureSpan(t, 5, d.s, d.j, func(i int) (effectCall, func() error, error) {
		msgID := fmt.Sprintf("probe-%s-%d", d.run, i)
		return effectCall{protocol.MethodChannelSend.Name, msgID, send(msgID)}, nil, nil
	})
	deliveries := func(msgID string, want int) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return settleCount(ctx, d.count, "msg", msgID, want)
	}
	var (
		mu    sync.Mutex
		never = map[int]killOutcome{} // trials whose delivery was not made
		ids   = map[int]string{}
		last  time.Time
	)
	trial := func(t *testing.T, i int, killAfter time.Duration) (string, bool) {
		msgID := fmt.Sprintf("m-%s-%d", d.run, i)
		out, err := killAndResolve(t, d.s, d.j, effectCall{protocol.MethodChannelSend.Name, msgID, send(msgID)}, killAfter)
		if err != nil {
			t.Errorf("%s: %v", msgID, err)
			return "error", false
		}
		want := 1
		switch out.how {
		case "answered", string(replay.Found):
		case replay.ReasonNotAccepted, "not-sent":
			want = 0
			mu.Lock()
			never[i], ids[i], last = out, msgID, time.Now()
			mu.Unlock()
		default:
			t.Errorf("%s: resolved %s", msgID, out.how)
			return out.how, false
		}
		if _, err := deliveries(msgID, want); err != nil {
			t.Errorf("%s: %s, and %v", msgID, out.how, err)
			return out.how, false
		}
		return out.how, true
	}
	after := func(t *testing.T) map[int]bool {
		mu.Lock()
		defer mu.Unlock()
		time.Sleep(time.Until(last.Add(lateRunBound)))
		return d.neverDelivered(t, never, ids)
	}
	runDrillThen(t, drill, 4, span, trial, after)
	if _, err := caller.Invoke(ctxFor(t, time.Minute), d.p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: key}); err != nil {
		t.Errorf("job.stop: %v", err)
	}
}

// neverDelivered checks the trials whose delivery was not made, once no
// late run can still come: none of their msgIds is in the inbox, and a
// receipt (of a trial that left an intent) still answers not-accepted.
// It returns the trials that fail.
func (d *jobDrill) neverDelivered(t *testing.T, never map[int]killOutcome, ids map[int]string) map[int]bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	failed := map[int]bool{}
	out, err := d.inbox(ctx)
	if err != nil || !strings.HasSuffix(out, "end") {
		t.Errorf("listing the inbox at the end: %v", err)
		for i := range never {
			failed[i] = true
		}
		return failed
	}
	in := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		in[l] = true
	}
	for i, o := range never {
		msgID := ids[i]
		if in[msgID] {
			t.Errorf("%s: %s, and later delivered", msgID, o.how)
			failed[i] = true
			continue
		}
		if o.intent == nil {
			continue
		}
		if st, err := d.receiptNow(ctx, o.intent); err != nil || st != protocol.ReceiptNotAccepted {
			t.Errorf("%s: not-accepted, and later %q (%v)", msgID, st, err)
			failed[i] = true
		}
	}
	return failed
}

// receiptNow resolves the intent again as mu's next verb would, asking
// again while the receipt is unreachable or its call fails (bounded), and
// returns the receipt's state (accepted: the intent resolved).
func (d *jobDrill) receiptNow(ctx context.Context, in *replay.Intent) (string, error) {
	for tries := 1; ; tries++ {
		out, err := d.j.Resolve(ctx, d.p.Plugin, in)
		if err != nil {
			return "", err
		}
		if out.State == replay.Found {
			return receiptState(out.Result), nil
		}
		st := receiptState(out.Result)
		if out.Reason == replay.ReasonNotAccepted && st == protocol.ReceiptNotAccepted {
			return st, nil
		}
		if (out.Reason != replay.ReasonNotAccepted && out.Reason != replay.ReasonCall) || tries >= 20 || ctx.Err() != nil {
			return st, fmt.Errorf("unresolved after %d resolve(s): %s %s", tries, out, out.Result)
		}
		time.Sleep(time.Second)
	}
}
