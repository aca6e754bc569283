//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller/replay"
)

// jobDrill is one host shared by a drill's trials, and its journal.
type jobDrill struct {
	e    *Env
	s    spec
	p    *started // the long-lived plugin: set-up and clean-up calls
	host protocol.Target
	j    *replay.Journal
	run  string
}

func newJobDrill(t *testing.T) *jobDrill {
	e := getEnv(t)
	d := &jobDrill{e: e, s: e.drillDocker(), run: randHex(4)}
	d.p = startPlugin(t, d.s)
	d.host = acquireHost(t, d.p, "jobs-"+d.run)
	var err error
	if d.j, err = replay.Open(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	return d
}

func (d *jobDrill) ctr() string { return d.host.Host.Handle }

func (d *jobDrill) startParams(key, name string) protocol.JobStartParams {
	return protocol.JobStartParams{Base: protocol.Base{Target: d.host}, Key: key, Spec: agentSpec(name, key, ".", 50)}
}

func (d *jobDrill) stopParams(key, name string) protocol.KeyParams {
	return protocol.KeyParams{Base: protocol.Base{Target: jobTarget(d.host, key, "", name)}, Key: key}
}

// agents waits (bounded) for the key's agent process count to settle at
// want, and returns what it found.
func (d *jobDrill) agents(key string, want int) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return settleCount(ctx, d.ctr(), "job", key, want)
}

// TestDrillKillJobStart: job.start SIGKILLed at random points; once
// resolved (a fenced job.lookup), a found start runs exactly one agent for
// its key, a none runs none.
func TestDrillKillJobStart(t *testing.T) {
	d := newJobDrill(t)
	span := measureSpan(t, 3, d.s, d.j, func(i int) (effectCall, func() error, error) {
		key, name := fmt.Sprintf("probe-%s-%d", d.run, i), fmt.Sprintf("probe%d", i)
		return effectCall{protocol.MethodJobStart, key, d.startParams(key, name)}, func() error {
			return d.p.JobStop(testutil.Context(t, time.Minute), d.stopParams(key, name))
		}, nil
	})
	runDrill(t, "kill-job.start", 4, span, func(t *testing.T, i int, killAfter time.Duration) (string, bool) {
		key, name := fmt.Sprintf("js-%s-%d", d.run, i), fmt.Sprintf("a%d", i)
		out, err := killAndResolve(t, d.s, d.j, effectCall{protocol.MethodJobStart, key, d.startParams(key, name)}, killAfter)
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
		if err := d.p.JobStop(testutil.Context(t, time.Minute), d.stopParams(key, name)); err != nil {
			t.Errorf("%s: job.stop: %v", key, err)
			good = false
		}
		return out.how, good
	})
}

// TestDrillKillJobStop: job.stop SIGKILLed at random points; once
// reissued by the replay rules, no agent of the key runs and the job reads
// ended.
func TestDrillKillJobStop(t *testing.T) {
	d := newJobDrill(t)
	span := measureSpan(t, 3, d.s, d.j, func(i int) (effectCall, func() error, error) {
		key, name := fmt.Sprintf("probe-%s-%d", d.run, i), fmt.Sprintf("probe%d", i)
		if _, err := d.p.JobStart(testutil.Context(t, time.Minute), d.startParams(key, name)); err != nil {
			return effectCall{}, nil, err
		}
		_, err := d.agents(key, 1)
		return effectCall{protocol.MethodJobStop, key, d.stopParams(key, name)}, nil, err
	})
	runDrill(t, "kill-job.stop", 4, span, func(t *testing.T, i int, killAfter time.Duration) (string, bool) {
		key, name := fmt.Sprintf("jx-%s-%d", d.run, i), fmt.Sprintf("b%d", i)
		if _, err := d.p.JobStart(testutil.Context(t, time.Minute), d.startParams(key, name)); err != nil {
			t.Errorf("%s: job.start: %v", key, err)
			return "error", false
		}
		if _, err := d.agents(key, 1); err != nil {
			t.Errorf("%s: the started job: %v", key, err)
			return "error", false
		}
		out, err := killAndResolve(t, d.s, d.j, effectCall{protocol.MethodJobStop, key, d.stopParams(key, name)}, killAfter)
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
			if err := d.p.JobStop(testutil.Context(t, time.Minute), d.stopParams(key, name)); err != nil {
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
		st, err := d.p.JobStatus(testutil.Context(t, time.Minute), jobTarget(d.host, key, "", name))
		if err != nil || st.State != protocol.JobEnded {
			t.Errorf("%s: stopped (%s), and job.status %+v %v", key, out.how, st, err)
			good = false
		}
		return out.how, good
	})
}

// TestDrillKillChannelSend: channel.send SIGKILLed at random points, all
// to one agent; once resolved (an exact receipt), the msgId has exactly
// one delivery: a delivery not accepted is sent again, as mu would, and
// then has one.
func TestDrillKillChannelSend(t *testing.T) {
	d := newJobDrill(t)
	key, name := "chan-"+d.run, "chan"
	res, err := d.p.JobStart(testutil.Context(t, time.Minute), d.startParams(key, name))
	if err != nil {
		t.Fatal(err)
	}
	jt := jobTarget(d.host, key, res.Handle, name)
	drive.Baseline(t, testutil.Context(t, time.Minute), d.p.Plugin, jt)
	send := func(msgID string) protocol.SendParams {
		return protocol.SendParams{Base: protocol.Base{Target: jt}, Text: "drill " + msgID, MsgID: msgID, Mode: protocol.ModeFollowUp}
	}
	span := measureSpan(t, 5, d.s, d.j, func(i int) (effectCall, func() error, error) {
		msgID := fmt.Sprintf("probe-%s-%d", d.run, i)
		return effectCall{protocol.MethodChannelSend, msgID, send(msgID)}, nil, nil
	})
	deliveries := func(msgID string, want int) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return settleCount(ctx, d.ctr(), "msg", msgID, want)
	}
	runDrill(t, "kill-channel.send", 4, span, func(t *testing.T, i int, killAfter time.Duration) (string, bool) {
		msgID := fmt.Sprintf("m-%s-%d", d.run, i)
		out, err := killAndResolve(t, d.s, d.j, effectCall{protocol.MethodChannelSend, msgID, send(msgID)}, killAfter)
		if err != nil {
			t.Errorf("%s: %v", msgID, err)
			return "error", false
		}
		switch out.how {
		case "answered", string(replay.Found):
		case replay.ReasonNotAccepted, "not-sent":
			// Not delivered: nothing in the inbox; mu sends it again.
			if n, err := deliveries(msgID, 0); err != nil || n != 0 {
				t.Errorf("%s: %s, and %v", msgID, out.how, err)
				return out.how, false
			}
			if out.intent != nil {
				if err := d.j.Delete(out.intent.ID); err != nil {
					t.Errorf("%s: %v", msgID, err)
				}
			}
			if _, _, err := d.j.Effect(testutil.Context(t, time.Minute), d.p.Plugin, protocol.MethodChannelSend, "", send(msgID)); err != nil {
				t.Errorf("%s: the send again: %v", msgID, err)
				return out.how, false
			}
		default:
			t.Errorf("%s: resolved %s", msgID, out.how)
			return out.how, false
		}
		if _, err := deliveries(msgID, 1); err != nil {
			t.Errorf("%s: %s, and %v", msgID, out.how, err)
			return out.how, false
		}
		return out.how, true
	})
	if err := d.p.JobStop(testutil.Context(t, time.Minute), protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: key}); err != nil {
		t.Errorf("job.stop: %v", err)
	}
}
