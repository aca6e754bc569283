package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

var errNoAgentTarget = protocol.Errorf(protocol.Permanent, "target.agent is required")

// withAgent runs fn on the asked agent, advanced to now; a is nil when the
// fake has no such agent. A write saves the world and the job's transcript.
func (f *Fake) withAgent(ctx context.Context, t protocol.Target, write bool, fn func(w *World, a *Agent, j *Job, now int64) error) error {
	if t.Agent == nil {
		return errNoAgentTarget
	}
	key := agentKey(t.Agent.Workstream, t.Agent.Name)
	return f.do(ctx, write, func(w *World) error {
		now := f.now()
		a := w.Agents[key]
		var j *Job
		if a != nil {
			a.advance(now)
			j = w.Jobs[a.Job]
		}
		if err := fn(w, a, j, now); err != nil {
			return err
		}
		if write && a != nil && j != nil {
			f.writeTranscript(j, a)
		}
		return nil
	})
}

func (f *Fake) readStates(ctx context.Context, call *protocol.Call, p protocol.ReadStatesParams) (map[string]protocol.Reading, error) {
	out := map[string]protocol.Reading{}
	err := f.do(ctx, false, func(w *World) error {
		now := f.now()
		for _, t := range p.Targets {
			k := agentKey(t.Workstream, t.Name)
			if a := w.Agents[k]; a != nil {
				a.advance(now)
				out[k] = a.reading()
			}
		}
		return nil
	})
	return out, err
}

func (f *Fake) baseline(ctx context.Context, call *protocol.Call, p protocol.Base) (*protocol.Baseline, error) {
	var out *protocol.Baseline
	err := f.withAgent(ctx, p.Target, false, func(w *World, a *Agent, j *Job, now int64) error {
		if a != nil {
			out = &protocol.Baseline{Runs: a.Runs, Incarnation: a.Inc}
		}
		return nil
	})
	return out, err
}

// receipt answers accepted for a delivery it remembers, else not-accepted,
// and then final: the msgId is fenced, so no delivery of it is ever taken
// (effect refuses it). The world's lock makes the answer and the fence one
// step with any delivery (docs/protocol.md).
func (f *Fake) receipt(ctx context.Context, call *protocol.Call, p protocol.ReceiptParams) (protocol.Receipt, error) {
	out := protocol.Receipt{State: protocol.ReceiptNotAccepted, ID: p.MsgID}
	unfenced := ctxFault(ctx, FaultUnfencedReceipt)
	err := f.withAgent(ctx, p.Target, true, func(w *World, a *Agent, j *Job, now int64) error {
		switch {
		case a == nil:
			out = protocol.Receipt{State: protocol.ReceiptUnreachable, ID: p.MsgID, Reason: "no such agent in this fake's world"}
		case a.Deliveries[p.MsgID] != nil:
			out = a.Deliveries[p.MsgID].Receipt
		case a.NotAccepted[p.MsgID] != 0:
		case a.Forgot > 0:
			out = forgottenReceipt(a, p.MsgID)
		case unfenced: // the fault: not-accepted, and no fence
		default:
			if !fence(a, p.MsgID, now) {
				out = fencesFull(p.MsgID)
			}
		}
		return nil
	})
	return out, err
}

// lastRun answers turn afterRuns+1 of the asked incarnation (the current
// one when inc is empty): the turn a delivery whose baseline was afterRuns
// started. null while it has not settled, or when inc is not the agent's
// incarnation now (docs/protocol.md).
func (f *Fake) lastRun(ctx context.Context, call *protocol.Call, p protocol.LastRunParams) (*protocol.Observation, error) {
	if p.AfterRuns < 0 {
		return nil, protocol.Errorf(protocol.Permanent, "channel.lastRun: afterRuns %d is negative", p.AfterRuns)
	}
	newest, earlier := ctxFault(ctx, FaultNewestTurn), ctxFault(ctx, FaultEarlierTurn)
	var out *protocol.Observation
	err := f.withAgent(ctx, p.Target, false, func(w *World, a *Agent, j *Job, now int64) error {
		if a == nil {
			return nil
		}
		if newest { // the fault: the newest settled turn, of any incarnation
			if rec, _ := a.turn(a.Runs); rec != nil && (rec.Runs > p.AfterRuns || (p.Inc != "" && p.Inc != a.Inc)) {
				o := a.settledObs(*rec)
				out = &o
			}
			return nil
		}
		if p.Inc != "" && p.Inc != a.Inc {
			if earlier && w.hadInc(p.Inc) { // the fault: an earlier incarnation's turn, as if kept
				o := earlierObs(p.Inc, p.AfterRuns+1, now)
				out = &o
			}
			return nil
		}
		rec, forgotten := a.turn(p.AfterRuns + 1)
		if forgotten {
			return errForgotten(call.Method, p.AfterRuns+1, a)
		}
		if rec != nil {
			o := a.settledObs(*rec)
			out = &o
		}
		return nil
	})
	return out, err
}

func errForgotten(method string, n int64, a *Agent) error {
	return protocol.Errorf(protocol.Permanent, "%s: turn %d of %s settled, but the fake keeps only the last %d turns (%d settled)", method, n, a.Inc, maxTurns, a.Runs)
}

func (f *Fake) watch(ctx context.Context, call *protocol.Call, p protocol.WatchParams) (protocol.WatchResult, error) {
	if p.AfterRuns != nil && *p.AfterRuns < 0 {
		return protocol.WatchResult{}, protocol.Errorf(protocol.Permanent, "channel.watch: afterRuns %d is negative", *p.AfterRuns)
	}
	var res protocol.WatchResult
	var after int64
	var inc string
	var wasEarlier bool // inc is an incarnation the fake had before
	err := f.withAgent(ctx, p.Target, false, func(w *World, a *Agent, j *Job, now int64) error {
		if a == nil {
			return protocol.Errorf(protocol.Permanent, "channel.watch: no such agent in this fake's world")
		}
		after, inc = a.Runs, a.Inc
		if p.AfterRuns != nil {
			after = *p.AfterRuns
		}
		if p.Inc != "" {
			inc = p.Inc
		}
		if _, forgotten := a.turn(after + 1); forgotten && inc == a.Inc {
			return errForgotten(call.Method, after+1, a)
		}
		res.Initial = a.observation()
		wasEarlier = inc != a.Inc && w.hadInc(inc)
		return nil
	})
	if err != nil {
		return protocol.WatchResult{}, err
	}
	res.WatchID = fmt.Sprintf("w-%d-%d", os.Getpid(), f.watches.Add(1))
	res.AfterRuns = &after
	t := p.Target
	if ctxFault(ctx, FaultEarlyNotify) {
		// The fault: the notification goes out before its reply.
		f.faults.wire.inject(notification(protocol.NotifyWatchSettled, protocol.WatchSettled{WatchID: res.WatchID, Observation: res.Initial}))
		return res, nil
	}
	if ctxFault(ctx, replyReplaced) {
		return res, nil // mu never sees this watch's id: it never starts
	}
	double := ctxFault(ctx, FaultDoubleNotify)
	newest := ctxFault(ctx, FaultNewestTurn)
	earlier := ctxFault(ctx, FaultEarlierTurn)
	call.Watch(res.WatchID, func(wctx context.Context) (string, any) {
		method, params := f.awaitSettle(wctx, t, res.WatchID, after, inc, newest)
		if earlier && wasEarlier && method == protocol.NotifyWatchRestarted {
			// The fault: an earlier incarnation's turn, as if kept.
			method, params = protocol.NotifyWatchSettled, protocol.WatchSettled{WatchID: res.WatchID, Observation: earlierObs(inc, after+1, time.Now().UnixMilli())}
		}
		if double && method != "" {
			f.faults.wire.inject(notification(method, params))
		}
		return method, params
	})
	return res, nil
}

// awaitSettle polls the agent until turn after+1 of inc has settled
// (watch/settled, at once when it already has) or the agent's incarnation
// is not inc (watch/restarted, at once for an incarnation not current).
// With newest (the fault) it answers the newest settled turn instead.
func (f *Fake) awaitSettle(ctx context.Context, t protocol.Target, id string, after int64, inc string, newest bool) (string, any) {
	for {
		var method string
		var params any
		wait := 50 * time.Millisecond
		err := f.withAgent(ctx, t, false, func(w *World, a *Agent, j *Job, now int64) error {
			if a == nil {
				method, params = protocol.NotifyWatchRestarted, protocol.WatchRestarted{WatchID: id, Incarnation: "gone"}
				return nil
			}
			if a.Inc != inc {
				method, params = protocol.NotifyWatchRestarted, protocol.WatchRestarted{WatchID: id, Incarnation: a.Inc}
				return nil
			}
			n := after + 1
			if newest {
				n = a.Runs
			}
			if rec, _ := a.turn(n); rec != nil && a.Runs > after {
				method, params = protocol.NotifyWatchSettled, protocol.WatchSettled{WatchID: id, Observation: a.settledObs(*rec)}
				return nil
			}
			if a.Turn != nil && !a.Turn.Blocked {
				if d := time.Duration(a.Turn.SettleAt-now) * time.Millisecond; d < wait {
					wait = max(d, time.Millisecond)
				}
			}
			return nil
		})
		if err == nil && method != "" {
			return method, params
		}
		if sleepCtx(ctx, wait) != nil {
			return "", nil
		}
	}
}

func notification(method string, params any) []byte {
	b, _ := json.Marshal(struct {
		V      string `json:"jsonrpc"`
		Method string `json:"method"`
		Params any    `json:"params"`
	}{"2.0", method, params})
	return b
}

// effect runs one delivery (R: its method's result) under the channel's rules: a msgId seen before
// with the exact same params (deadline aside) returns its first reply and
// does nothing; with other params it is refused. The agent's job must run
// and, when given, expectIncarnation match.
func effect[R any](ctx context.Context, f *Fake, call *protocol.Call, msgID, expectInc string, fn func(w *World, a *Agent, now int64) (R, int64, error)) (R, error) {
	var res R
	if err := checkMsgID(call.Method, msgID); err != nil {
		return res, err
	}
	hash, err := paramsHash(call.Params)
	if err != nil {
		return res, protocol.Wrap(protocol.Permanent, err, call.Method)
	}
	var out json.RawMessage
	err = f.withAgent(ctx, call.Base.Target, true, func(w *World, a *Agent, j *Job, now int64) error {
		if a == nil {
			return protocol.Errorf(protocol.Permanent, "%s: no such agent in this fake's world", call.Method)
		}
		if d := a.Deliveries[msgID]; msgID != "" && d != nil {
			if d.Hash != hash || d.Method != call.Method {
				return protocol.Errorf(protocol.Permanent, "%s: msgId %s was delivered with other params", call.Method, msgID)
			}
			out = d.Reply
			return nil
		}
		if msgID != "" && a.NotAccepted[msgID] != 0 {
			return protocol.Errorf(protocol.Permanent, "%s: refused: a channel.receipt already answered not-accepted for msgId %s, "+
				"and that answer is final: nothing was delivered (send the text under a new msgId)", call.Method, msgID)
		}
		if j == nil || j.State != stateRunning {
			return protocol.Errorf(protocol.Permanent, "%s: the agent's job is not running", call.Method)
		}
		if expectInc != "" && expectInc != a.Inc {
			return protocol.Errorf(protocol.Permanent, "%s: the agent restarted (incarnation %s, expected %s)", call.Method, a.Inc, expectInc)
		}
		v, base, err := fn(w, a, now)
		if err != nil {
			return err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		out = b
		if msgID != "" {
			a.Deliveries[msgID] = &Delivery{Method: call.Method, Hash: hash, Reply: b, Receipt: protocol.Receipt{
				State: protocol.ReceiptAccepted, ID: msgID, Runs: &base, At: &now, Incarnation: a.Inc}}
			forgetDeliveries(a, now)
		}
		return nil
	})
	if err == nil {
		// The first reply's bytes, as the type that made them.
		err = json.Unmarshal(out, &res)
	}
	return res, err
}

func refuseBlocked(a *Agent, force bool, method string) error {
	if a.state() == protocol.TurnBlocked && !force {
		return protocol.Errorf(protocol.Permanent, "%s: the agent waits for an answer (%s); answer it, or deliver with force", method, a.pending())
	}
	return nil
}

func (f *Fake) send(ctx context.Context, call *protocol.Call, p protocol.SendParams) (protocol.SendResult, error) {
	if p.Mode != protocol.ModeFollowUp && p.Mode != protocol.ModeSteer {
		return protocol.SendResult{}, protocol.Errorf(protocol.Permanent, "channel.send: mode %q is not followUp or steer", p.Mode)
	}
	if p.MsgID == "" {
		return protocol.SendResult{}, protocol.Errorf(protocol.Permanent, "channel.send: msgId is required")
	}
	if p.FirstPrompt && f.cfg.FirstTurn == protocol.FirstTurnAtStart {
		return protocol.SendResult{}, protocol.Errorf(protocol.Permanent, "channel.send: firstPrompt is never true for an at-start kind")
	}
	return effect(ctx, f, call, p.MsgID, p.ExpectIncarnation, func(w *World, a *Agent, now int64) (protocol.SendResult, int64, error) {
		if err := refuseBlocked(a, p.Force, call.Method); err != nil {
			return protocol.SendResult{}, 0, err
		}
		if p.Mode != protocol.ModeSteer || a.state() == protocol.TurnBlocked {
			if err := roomInQueue(a, call.Method); err != nil {
				return protocol.SendResult{}, 0, err
			}
		}
		base := a.deliver(Msg{ID: p.MsgID, Text: p.Text}, now, p.Mode == protocol.ModeSteer)
		return protocol.SendResult{Channel: ChannelName, Ack: protocol.AckConfirmed, Baseline: &base, MsgID: p.MsgID}, base, nil
	})
}

func (f *Fake) fresh(ctx context.Context, call *protocol.Call, p protocol.FreshParams) (protocol.SendResult, error) {
	if p.MsgID == "" {
		return protocol.SendResult{}, protocol.Errorf(protocol.Permanent, "channel.fresh: msgId is required")
	}
	return effect(ctx, f, call, p.MsgID, p.ExpectIncarnation, func(w *World, a *Agent, now int64) (protocol.SendResult, int64, error) {
		if err := refuseBlocked(a, p.Force, call.Method); err != nil {
			return protocol.SendResult{}, 0, err
		}
		a.restart("inc-"+strconv.FormatInt(w.next(), 10), now)
		base := a.deliver(Msg{ID: p.MsgID, Text: p.Text}, now, false)
		return protocol.SendResult{Channel: ChannelName, Ack: protocol.AckConfirmed, Baseline: &base, MsgID: p.MsgID}, base, nil
	})
}

func (f *Fake) command(ctx context.Context, call *protocol.Call, p protocol.CommandParams) (protocol.SendResult, error) {
	if p.Name == "" {
		return protocol.SendResult{}, protocol.Errorf(protocol.Permanent, "channel.command: name is required")
	}
	return effect(ctx, f, call, "", p.ExpectIncarnation, func(w *World, a *Agent, now int64) (protocol.SendResult, int64, error) {
		if err := refuseBlocked(a, p.Force, call.Method); err != nil {
			return protocol.SendResult{}, 0, err
		}
		if err := roomInQueue(a, call.Method); err != nil {
			return protocol.SendResult{}, 0, err
		}
		text := "/" + p.Name
		if p.Instructions != "" {
			text += " " + p.Instructions
		}
		base := a.deliver(Msg{Text: text}, now, false)
		return protocol.SendResult{Channel: ChannelName, Ack: protocol.AckConfirmed, Baseline: &base}, base, nil
	})
}

func (f *Fake) interrupt(ctx context.Context, call *protocol.Call, p protocol.InterruptParams) (protocol.InterruptResult, error) {
	return effect(ctx, f, call, p.MsgID, p.ExpectIncarnation, func(w *World, a *Agent, now int64) (protocol.InterruptResult, int64, error) {
		wasBusy := a.cut(now, "interrupted", false)
		base := a.Runs
		if p.Text != "" {
			q := a.Queue
			a.Queue = nil
			base = a.deliver(Msg{ID: p.MsgID, Text: p.Text}, now, false)
			a.Queue = q
		}
		return protocol.InterruptResult{WasBusy: wasBusy, Pending: false, Runs: &base, MsgID: p.MsgID, Incarnation: a.Inc}, base, nil
	})
}

func (f *Fake) abort(ctx context.Context, call *protocol.Call, p protocol.AbortParams) (protocol.AbortResult, error) {
	return effect(ctx, f, call, "", "", func(w *World, a *Agent, now int64) (protocol.AbortResult, int64, error) {
		before := protocol.TurnIdle
		if a.Turn != nil {
			before = protocol.TurnBusy
		}
		aborted := a.cut(now, "aborted", true)
		return protocol.AbortResult{Before: before, After: protocol.TurnIdle, Settled: true, Aborted: aborted, Pending: false}, a.Runs, nil
	})
}

func (f *Fake) answer(ctx context.Context, call *protocol.Call, p protocol.AnswerParams) (protocol.AnswerResult, error) {
	keys := p.Keys
	if keys == nil {
		keys = []string{}
	}
	return effect(ctx, f, call, "", "", func(w *World, a *Agent, now int64) (protocol.AnswerResult, int64, error) {
		if a.Turn == nil || !a.Turn.Blocked {
			if !p.Force {
				return protocol.AnswerResult{}, 0, protocol.Errorf(protocol.Permanent, "channel.answer: no question is pending")
			}
			return protocol.AnswerResult{Keys: keys, Ack: protocol.AckUnknown}, a.Runs, nil
		}
		t := a.Turn
		t.Blocked, t.Answered, t.SettleAt = false, true, now+a.TurnMs
		a.Since = now
		a.event(now, "user", fmt.Sprintf("answers %s: %v", t.Block, keys))
		return protocol.AnswerResult{Keys: keys, Ack: protocol.AckConfirmed}, a.Runs, nil
	})
}

// earlierObs is the earlier-turn fault's answer: turn n of an earlier
// incarnation inc, settled, as a channel that kept it would answer.
func earlierObs(inc string, n, now int64) protocol.Observation {
	return protocol.Observation{Status: protocol.TurnIdle, Settled: true, Since: now, Runs: n, Incarnation: inc, LastText: "an earlier incarnation's turn"}
}
