package fake

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/mu-org/mu-plugins/protocol"
)

// Agent is the simulated agent a job runs: a turn machine on a clock. Its
// state at time t is a pure function of what was delivered and when, so a
// read computes it (advance) and two invocations agree.
type Agent struct {
	Job        string               `json:"job"` // the job's key
	Inc        string               `json:"inc"`
	Runs       int64                `json:"runs"`
	Since      int64                `json:"since"` // ms: when the current state began
	Turn       *Turn                `json:"turn,omitempty"`
	Queue      []Msg                `json:"queue,omitempty"`
	Turns      []TurnRec            `json:"turns,omitempty"`  // the settled turns of Inc, the newest last (bounded: limits.go)
	Forgot     int                  `json:"forgot,omitempty"` // deliveries forgotten (bounded: limits.go)
	Deliveries map[string]*Delivery `json:"deliveries"`       // by msgId
	// NotAccepted fences the msgIds a receipt answered not-accepted for
	// (when): none of them is ever delivered (bounded: limits.go).
	NotAccepted map[string]int64 `json:"notAccepted,omitempty"`
	Events      []Event          `json:"events,omitempty"`
	TurnMs      int64            `json:"turnMs"`
}

// Msg is a delivery waiting for, or making, a turn. Text is kept cut to
// what a settled turn's lastText can carry (Cut says so).
type Msg struct {
	ID   string `json:"id,omitempty"`
	Text string `json:"text"`
	Cut  bool   `json:"cut,omitempty"`
}

// TurnRec is one settled turn: Runs is its number in the incarnation.
type TurnRec struct {
	Runs  int64  `json:"runs"`
	Since int64  `json:"since"`
	Text  string `json:"text,omitempty"`
	Cut   bool   `json:"cut,omitempty"` // lastTextTruncated
	Error string `json:"error,omitempty"`
}

// Turn is the turn in progress.
type Turn struct {
	Msg
	Start    int64  `json:"start"`
	SettleAt int64  `json:"settleAt"`
	Block    string `json:"block,omitempty"` // the dialog the turn stops on
	Blocked  bool   `json:"blocked,omitempty"`
	Answered bool   `json:"answered,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Delivery remembers one effect by msgId: the hash of its exact params (for
// dedupe) and its first reply (for a repeat and for channel.receipt).
type Delivery struct {
	Method  string           `json:"method"`
	Hash    string           `json:"hash"`
	Reply   []byte           `json:"reply"`
	Receipt protocol.Receipt `json:"receipt"`
}

// Event is one transcript line.
type Event struct {
	At   int64  `json:"at"`
	Who  string `json:"who"`
	Text string `json:"text"`
}

// Markers in a delivery's text steer the simulated agent (docs/fake.md).
var (
	blockRe = regexp.MustCompile(`\[\[block:([A-Za-z0-9_.-]+)\]\]`)
	sleepRe = regexp.MustCompile(`\[\[ms:([0-9]{1,9})\]\]`)
	errorRe = regexp.MustCompile(`\[\[error:([^\]]*)\]\]`)
)

// replyTo is the lastText a turn settles with: derived from its message.
func replyTo(text string) string { return "fake: done: " + text }

// state is the agent's turn state now (after advance).
func (a *Agent) state() string {
	switch {
	case a.Turn == nil:
		return protocol.TurnIdle
	case a.Turn.Blocked:
		return protocol.TurnBlocked
	}
	return protocol.TurnBusy
}

func (a *Agent) pending() string {
	if a.Turn != nil && a.Turn.Blocked {
		return a.Turn.Block
	}
	return ""
}

// advance moves the agent to time now: turns whose time is up settle, in
// order, each starting the next queued message at its own settle time.
func (a *Agent) advance(now int64) {
	for a.Turn != nil {
		t := a.Turn
		if t.Blocked || now < t.SettleAt {
			return
		}
		if t.Block != "" && !t.Answered {
			t.Blocked = true
			a.Since = t.SettleAt
			a.event(t.SettleAt, "agent", "asks: "+t.Block+" (waiting for an answer)")
			return
		}
		a.settle(t.SettleAt, replyTo(t.Text), t.Cut, t.Error)
		if len(a.Queue) > 0 {
			m := a.Queue[0]
			a.Queue = a.Queue[1:]
			a.start(m, t.SettleAt)
		}
	}
}

// start begins a turn on m at time at.
func (a *Agent) start(m Msg, at int64) {
	d := a.TurnMs
	if s := sleepRe.FindStringSubmatch(m.Text); s != nil {
		d, _ = strconv.ParseInt(s[1], 10, 64)
	}
	t := &Turn{Msg: m, Start: at, SettleAt: at + d}
	if b := blockRe.FindStringSubmatch(m.Text); b != nil {
		t.Block = b[1]
	}
	if e := errorRe.FindStringSubmatch(m.Text); e != nil {
		t.Error = e[1]
	}
	a.Turn = t
	a.Since = at
	a.event(at, "user", m.Text)
}

// settle ends the turn in progress: runs goes up by one, and the turn is
// kept (its text cut to fit a reply) for lastRun and watch.
func (a *Agent) settle(at int64, text string, cut bool, errText string) {
	a.Runs++
	a.Turn = nil
	a.Since = at
	text, c := fitText(text, maxSettleText)
	errText, _ = fitText(errText, maxErrorText)
	a.Turns = append(a.Turns, TurnRec{Runs: a.Runs, Since: at, Text: text, Cut: cut || c, Error: errText})
	a.Turns = boundTurns(a.Turns)
	if errText != "" {
		a.event(at, "agent", "error: "+errText)
	} else {
		a.event(at, "agent", text)
	}
}

// deliver hands m to the agent at now: a turn at once when idle, else queued
// (steer: folded into the turn in progress). It returns the delivery's
// baseline: the turn count before the turn it starts.
func (a *Agent) deliver(m Msg, now int64, steer bool) int64 {
	m.Text, m.Cut = cutMsg(m.Text, m.Cut)
	switch {
	case a.Turn == nil:
		a.start(m, now)
		return a.Runs
	case steer && !a.Turn.Blocked:
		a.Turn.Text, a.Turn.Cut = cutMsg(a.Turn.Text+"\n"+m.Text, a.Turn.Cut || m.Cut)
		a.event(now, "user", "(steer) "+m.Text)
		return a.Runs
	}
	a.Queue = append(a.Queue, m)
	return a.Runs + int64(len(a.Queue))
}

// restart begins a new incarnation: runs back to 0, nothing in progress.
func (a *Agent) restart(inc string, now int64) {
	a.Inc, a.Runs, a.Turn, a.Queue, a.Turns, a.Since = inc, 0, nil, nil, nil, now
	a.event(now, "fake", "new session "+inc)
}

// cut ends the turn in progress at now as a settled turn with errText, and
// drops the queue when drop is set. It reports whether a turn was running.
func (a *Agent) cut(now int64, errText string, drop bool) bool {
	if drop {
		a.Queue = nil
	}
	if a.Turn == nil {
		return false
	}
	a.settle(now, "", false, errText)
	return true
}

func (a *Agent) event(at int64, who, text string) {
	a.Events = append(a.Events, Event{At: at, Who: who, Text: clipEvent(text)})
	if n := len(a.Events); n > maxEvents {
		a.Events = append([]Event(nil), a.Events[n-maxEvents:]...)
	}
}

// turn is settled turn n of the current incarnation: nil when it has not
// settled; forgotten when it settled but is no longer kept.
func (a *Agent) turn(n int64) (rec *TurnRec, forgotten bool) {
	if n < 1 || n > a.Runs {
		return nil, false
	}
	if len(a.Turns) == 0 || n < a.Turns[0].Runs {
		return nil, true
	}
	r := a.Turns[n-a.Turns[0].Runs]
	return &r, false
}

// settledObs is settled turn rec as the channel reports it.
func (a *Agent) settledObs(rec TurnRec) protocol.Observation {
	return protocol.Observation{Status: protocol.TurnIdle, Settled: true, Since: rec.Since, Runs: rec.Runs,
		Incarnation: a.Inc, LastText: rec.Text, LastTextTruncated: rec.Cut, LastError: rec.Error}
}

// observation is the agent's turn now, as the channel reports it: an idle
// agent's carries its last settled turn's text.
func (a *Agent) observation() protocol.Observation {
	last, _ := a.turn(a.Runs)
	if a.Turn == nil && last != nil {
		return a.settledObs(*last)
	}
	return protocol.Observation{Status: a.state(), Settled: a.Turn == nil, Since: a.Since, Runs: a.Runs, Incarnation: a.Inc, Pending: a.pending()}
}

func (a *Agent) reading() protocol.Reading {
	return protocol.Reading{State: a.state(), Since: a.Since, Runs: a.Runs, Incarnation: a.Inc, Pending: a.pending()}
}

// projected is the transcript as it will read once every scheduled turn
// has settled: what a view follows, printing each line when its time comes.
func (a *Agent) projected() []Event {
	cp := *a
	cp.Events = append([]Event(nil), a.Events...)
	if a.Turn != nil {
		t := *a.Turn
		cp.Turn = &t
	}
	cp.Queue = append([]Msg(nil), a.Queue...)
	cp.advance(1<<62 - 1)
	return cp.Events
}

func agentKey(ws, name string) string { return ws + "/" + strings.TrimSpace(name) }
