package tmuxjob

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// jobKey is the job a channel call is about: its target's job.
func jobKey(method string, b protocol.Base) (string, error) {
	if b.Target.Job == nil || b.Target.Job.Key == "" {
		return "", protocol.Errorf(protocol.Permanent, "%s: target.job.key is required", method)
	}
	return b.Target.Job.Key, nil
}

// snapshot is one read of the host: the job's agent, the harness's state
// (nil before the harness has written one) and one settled turn.
type snapshot struct {
	agent string
	state *hstate
	turn  *turnRec
	bad   string // why the state file is not the contract's
	// failed is why the harness failed (the adapter's out/failed: its CLI
	// exited before its first session), "" when it did not say so.
	failed string
}

// read reads the state and, when n > 0, turn n of incarnation inc (""
// for the current one).
func (j *Jobs) read(ctx context.Context, key, inc string, n int64) (snapshot, bool, error) {
	if inc != "" && !validInc(inc) {
		return snapshot{}, true, nil // no such incarnation can exist
	}
	o, err := j.run(ctx, "read", jobID(key), nil, inc, strconv.FormatInt(n, 10), j.inlineArg())
	if err != nil {
		return snapshot{}, false, err
	}
	if o.has("nojob") {
		return snapshot{}, false, nil
	}
	s, err := j.snapshotOf(ctx, key, o)
	return s, err == nil, err
}

func parseSnapshot(o out) snapshot {
	s := snapshot{agent: string(o.data("agent")), failed: string(o.data("failed"))}
	if b, ok := stateOf(o); ok {
		st, ok := parseState(b)
		if ok {
			s.state = &st
		} else {
			s.bad = "the harness's state file does not follow the contract"
		}
	}
	if o.hasBlob("turn") {
		if t, ok := parseTurn(o.blob("turn")); ok {
			s.turn = &t
		}
	}
	return s
}

// stateOf is the harness's state file as a script printed it: "state 1"
// then its lines, one "S <line>" each (lib.sh: saystate), or a blob.
func stateOf(o out) ([]byte, bool) {
	if o.hasBlob("state") {
		return o.blob("state"), true
	}
	if !o.has("state") {
		return nil, false
	}
	var b []byte
	for _, l := range o.all("S") {
		b = append(append(b, l...), '\n')
	}
	return b, true
}

// readNow reads the current state and, when the agent is idle past turn
// 0, its last settled turn: one run.
func (j *Jobs) readNow(ctx context.Context, key string) (snapshot, bool, error) {
	return j.read(ctx, key, "", -1)
}

func noJob(method string) error {
	return protocol.Errorf(protocol.Permanent, "%s: no job under this key on the host", method)
}

// ReadStates is channel.readStates: the job's agent's reading, for each
// target that names it (others are left out).
func (j *Jobs) ReadStates(ctx context.Context, p protocol.ReadStatesParams) (map[string]protocol.Reading, error) {
	key, err := jobKey(protocol.MethodChannelReadStates.Name, p.Base)
	if err != nil {
		return nil, err
	}
	s, found, err := j.read(ctx, key, "", 0)
	if err != nil {
		return nil, protocol.Wrap(protocol.Retryable, err, "channel.readStates")
	}
	if !found {
		return nil, noJob(protocol.MethodChannelReadStates.Name)
	}
	res := map[string]protocol.Reading{}
	for _, t := range p.Targets {
		k := t.Workstream + "/" + t.Name
		if k != s.agent {
			continue
		}
		switch {
		case s.failed != "":
			res[k] = protocol.Reading{State: protocol.TurnUnknown, Since: j.now(), Reason: "the harness failed: " + s.failed}
		case s.state != nil:
			st := s.state
			r := protocol.Reading{State: st.State, Since: st.Since, Runs: st.Runs, Incarnation: st.Inc}
			if st.State == protocol.TurnBlocked {
				r.Pending = st.Pending
			}
			res[k] = r
		case s.bad != "":
			res[k] = protocol.Reading{State: protocol.TurnUnknown, Since: j.now(), Reason: s.bad}
		default:
			res[k] = protocol.Reading{State: protocol.TurnUnknown, Since: j.now(), Reason: "the harness has not reported yet"}
		}
	}
	return res, nil
}

func (j *Jobs) now() int64 { return j.opts.Now().UnixMilli() }

// Baseline is channel.baseline: the turn count now, or nil before the
// harness has reported (the job is not ready).
func (j *Jobs) Baseline(ctx context.Context, key string) (*protocol.Baseline, error) {
	if key == "" {
		return nil, protocol.Errorf(protocol.Permanent, "channel.baseline: target.job.key is required")
	}
	s, found, err := j.read(ctx, key, "", 0)
	if err != nil {
		return nil, protocol.Wrap(protocol.Retryable, err, "channel.baseline")
	}
	if !found {
		return nil, noJob(protocol.MethodChannelBaseline.Name)
	}
	if s.state == nil {
		return nil, nil
	}
	return &protocol.Baseline{Runs: s.state.Runs, Incarnation: s.state.Inc}, nil
}

// Receipt is channel.receipt: accepted once the delivery is in the job's
// inbox, with the baseline it was given; else not-accepted, and final:
// the host fences the msgId, so no delivery of it lands after (deliver
// refuses it). The host answers under the job's lock, so a delivery
// already writing finishes first; a lock not free within the call's budget
// (receiptLockWait) is unreachable, never not-accepted.
func (j *Jobs) Receipt(ctx context.Context, p protocol.ReceiptParams) (protocol.Receipt, error) {
	key, err := jobKey(protocol.MethodChannelReceipt.Name, p.Base)
	if err != nil {
		return protocol.Receipt{}, err
	}
	unreachable := func(why string) (protocol.Receipt, error) {
		return protocol.Receipt{State: protocol.ReceiptUnreachable, ID: p.MsgID, Reason: why}, nil
	}
	wait := strconv.FormatFloat(receiptLockWait(ctx, time.Now()).Seconds(), 'f', 3, 64)
	o, err := j.run(ctx, "receipt", jobID(key), nil, deliveryHash("msg", p.MsgID), j.opts.Nudge, wait)
	switch {
	case err != nil:
		return unreachable(err.Error())
	case o.has("busy"):
		return unreachable("channel.receipt: " + o.get("busy") + " (a start, stop or delivery of the job)")
	case o.has("none"):
		return protocol.Receipt{State: protocol.ReceiptNotAccepted, ID: p.MsgID}, nil
	case !o.has("accepted"):
		return unreachable("channel.receipt: no answer from the host")
	}
	r := protocol.Receipt{State: protocol.ReceiptAccepted, ID: p.MsgID, Incarnation: string(o.data("inc"))}
	if n, err := strconv.ParseInt(string(o.data("baseline")), 10, 64); err == nil {
		r.Runs = &n
	}
	if n, err := strconv.ParseInt(string(o.data("at")), 10, 64); err == nil {
		r.At = &n
	}
	return r, nil
}

// maxReceiptLockWait bounds a receipt's wait for the job's lock. Its
// holders are brief (a delivery, a start; a stop's kill loop the
// longest, a few seconds), and a receipt is a read: it answers
// unreachable rather than wait out a stop, and mu asks again later.
const maxReceiptLockWait = 5 * time.Second

// receiptLockWait is how long a receipt waits for the lock: half of what
// is left of its call (the other half carries the run there and back, so
// the answer comes in time), at most maxReceiptLockWait, at least 100 ms.
func receiptLockWait(ctx context.Context, now time.Time) time.Duration {
	w := maxReceiptLockWait
	if dl, ok := ctx.Deadline(); ok {
		w = min(w, dl.Sub(now)/2)
	}
	return max(w, 100*time.Millisecond)
}

// LastRun is channel.lastRun: the settled turn afterRuns+1 of inc (the
// current incarnation when empty), or nil while it has not settled or when
// inc is not the current incarnation.
func (j *Jobs) LastRun(ctx context.Context, p protocol.LastRunParams) (*protocol.Observation, error) {
	key, err := jobKey(protocol.MethodChannelLastRun.Name, p.Base)
	if err != nil {
		return nil, err
	}
	s, found, err := j.read(ctx, key, p.Inc, p.AfterRuns+1)
	if err != nil {
		return nil, protocol.Wrap(protocol.Retryable, err, "channel.lastRun")
	}
	if !found {
		return nil, noJob(protocol.MethodChannelLastRun.Name)
	}
	// Only the current incarnation's turns answer: one of an earlier
	// incarnation, even one that settled, is null (docs/protocol.md).
	if s.turn == nil || s.state == nil || (p.Inc != "" && p.Inc != s.state.Inc) {
		return nil, nil
	}
	o := j.settledObs(s.state.Inc, p.AfterRuns+1, *s.turn)
	return &o, nil
}

// Watch is channel.watch. It returns the reply and the function that waits
// for its one notification (for protocol.Call.Watch): watch/settled once a
// turn past afterRuns has settled in the incarnation, or watch/restarted
// when the incarnation changes. It waits on the host with every other
// watch of the host (Watches: one run for all, of at most 10 s at the
// default Options.Poll, waitLooks × Poll), then reads its turn. A run
// wakes on the harness's rename of a state where the host's GNU tail can
// follow it through inotify, else looks every Options.Poll
// (scripts/wait.sh; job.checkSteps' watch step says which). A failed run
// is tried again; ctx ($/cancel, shutdown) ends it with "".
func (j *Jobs) Watch(ctx context.Context, p protocol.WatchParams) (protocol.WatchResult, func(context.Context) (string, any), error) {
	key, err := jobKey(protocol.MethodChannelWatch.Name, p.Base)
	if err != nil {
		return protocol.WatchResult{}, nil, err
	}
	s, found, err := j.readNow(ctx, key)
	if err != nil {
		return protocol.WatchResult{}, nil, protocol.Wrap(protocol.Retryable, err, "channel.watch")
	}
	if !found {
		return protocol.WatchResult{}, nil, noJob(protocol.MethodChannelWatch.Name)
	}
	if s.state == nil {
		return protocol.WatchResult{}, nil, protocol.Errorf(protocol.Retryable, "channel.watch: the harness has not reported yet")
	}
	inc := p.Inc
	if inc == "" {
		inc = s.state.Inc
	}
	after := s.state.Runs
	if p.AfterRuns != nil {
		after = *p.AfterRuns
	}
	id := newWatchID()
	res := protocol.WatchResult{WatchID: id, Initial: j.currentObs(*s.state, s.turn), AfterRuns: &after}
	run := func(ctx context.Context) (string, any) {
		if !validInc(inc) { // no harness ever had it: not the channel's now
			return protocol.NotifyWatchRestarted, protocol.WatchRestarted{WatchID: id, Incarnation: s.state.Inc}
		}
		for {
			err := j.opts.Watches.ready(ctx, j, key, inc, after+1)
			var s snapshot
			found := false
			if err == nil {
				s, found, err = j.read(ctx, key, inc, after+1)
			}
			if err == nil && found && s.state != nil {
				// Another incarnation now: restarted, even when the
				// asked turn settled before the restart (docs/protocol.md).
				if s.state.Inc != inc {
					return protocol.NotifyWatchRestarted, protocol.WatchRestarted{WatchID: id, Incarnation: s.state.Inc}
				}
				if s.turn != nil {
					return protocol.NotifyWatchSettled, protocol.WatchSettled{WatchID: id, Observation: j.settledObs(inc, after+1, *s.turn)}
				}
			}
			if ctx.Err() != nil {
				return "", nil
			}
			// Ready but nothing to say (no job, a record not read whole,
			// a failed run): look again a poll later, never in a loop.
			if !sleep(ctx, j.opts.Poll) {
				return "", nil
			}
		}
	}
	return res, run, nil
}

func newWatchID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "w-" + hex.EncodeToString(b)
}
