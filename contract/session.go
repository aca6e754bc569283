package contract

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// Environment the suite puts in every plugin process it starts.
const (
	// CanaryVar carries a random value that must never come back (spec
	// "Secrets").
	CanaryVar = "MU_PLUGIN_CANARY"
	// MarkVar carries a random per-process value: a process that still
	// carries it once the plugin's group is gone was started outside the
	// group.
	MarkVar = "MU_CONTRACT_MARK"
)

// suite is one run's state: what every check shares, and what the summary
// checks judge.
type suite struct {
	opts   Options
	canary string
	run    string // this run's random id; marks are run-<n>
	tmp    string // scratch directory, removed at the end

	mu         sync.Mutex
	seq        int
	sessions   int
	decl       *protocol.InitializeResult
	declErr    error
	violations []observed // every protocol violation, by check
	escapes    []observed // every process found outside its plugin's group
	leaks      []observed // every place the canary appeared
	slowStops  []string   // every stop that had to kill the group
}

// observed is a finding of one session, kept for the summary checks.
type observed struct {
	check string
	rule  string // a violation's rule
	text  string
	wire  []string
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newSuite(opts Options) *suite {
	s := &suite{opts: opts, canary: "canary-" + randHex(16), run: randHex(6)}
	if d, err := os.MkdirTemp("", "mu-contract-"); err == nil {
		s.tmp = d
	}
	return s
}

func (s *suite) cleanup() {
	if s.tmp != "" {
		_ = os.RemoveAll(s.tmp)
	}
}

// Failure excerpt size: how many transcript lines a FAIL shows, and how
// many bytes of each line.
const (
	excerptLines = 8
	lineBytes    = 300
	keepLines    = 400
)

// session is one plugin process a check started: its transcript, its
// stderr, and what the scans found.
type session struct {
	t    *T
	mark string
	p    *caller.Plugin
	pgid int // for a raw session

	mu      sync.Mutex
	events  []string
	dropped int
	leak    string // where the canary first appeared
	tail    []byte // stderr's last bytes, to find a canary cut across writes

	ended  bool
	report caller.StopReport
	raw    *rawProc

	running map[string]string // calls in flight whose processes run, by id: their method
	escaped map[int]bool      // processes already reported outside the group
	wake    chan struct{}
	quit    chan struct{}
}

func (t *T) newSession() *session {
	t.s.mu.Lock()
	t.s.sessions++
	n := t.s.sessions
	t.s.mu.Unlock()
	ss := &session{t: t, mark: fmt.Sprintf("%s-%d", t.s.run, n),
		running: map[string]string{}, escaped: map[int]bool{}, wake: make(chan struct{}, 1), quit: make(chan struct{})}
	t.sessions = append(t.sessions, ss)
	go ss.scanWhileRunning()
	return ss
}

// record is the transcript hook: it keeps the lines and looks for the
// canary in every inbound message.
func (ss *session) record(e caller.Event) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if e.Dir == caller.In && ss.leak == "" && strings.Contains(string(e.Line), ss.t.s.canary) {
		ss.leak = "a message: " + clip(string(e.Line))
	}
	arrow := "->"
	if e.Dir == caller.In {
		arrow = "<-"
	}
	l := arrow + " " + clip(string(e.Line))
	if e.Oversize {
		l = arrow + " <a line over 1 MiB>"
	}
	if e.Note != "" {
		l += " (" + e.Note + ")"
	}
	ss.events = append(ss.events, l)
	if len(ss.events) > keepLines {
		ss.events = ss.events[1:]
		ss.dropped++
	}
	ss.track(e)
}

func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > lineBytes {
		return s[:lineBytes] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return s
}

type stderrScan struct{ ss *session }

func (w stderrScan) Write(b []byte) (int, error) {
	ss := w.ss
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.leak == "" {
		buf := append(append([]byte{}, ss.tail...), b...)
		if strings.Contains(string(buf), ss.t.s.canary) {
			ss.leak = "stderr"
		}
		if k := len(ss.t.s.canary); len(buf) > k {
			buf = buf[len(buf)-k:]
		}
		ss.tail = buf
	}
	return len(b), nil
}

func (ss *session) stderrWriter() stderrScan { return stderrScan{ss} }

// endedWith records a session whose start failed (its process is already
// stopped by the caller side).
func (ss *session) endedWith(err error) {
	ss.mu.Lock()
	ss.ended = true
	ss.mu.Unlock()
	close(ss.quit)
	var lr *caller.LoadRefusal
	if errors.As(err, &lr) {
		var v *caller.Violation
		if errors.As(lr.Err, &v) {
			ss.t.s.addViolation(ss.t, v, ss.excerpt(excerptLines))
		}
	}
	ss.scanAfter()
}

// end stops the session's plugin (mu's stop sequence), then records what
// it broke: a violation fails the check; a process outside the group and a
// canary leak are kept for the summary checks.
func (ss *session) end() {
	ss.mu.Lock()
	if ss.ended {
		ss.mu.Unlock()
		return
	}
	ss.ended = true
	ss.mu.Unlock()
	close(ss.quit)
	pgid := ss.pgid
	if ss.p != nil {
		pgid = ss.p.Pgid()
	}
	ss.scanBefore(pgid)
	if ss.raw != nil {
		ss.raw.kill()
	}
	if ss.p != nil {
		ss.report = ss.p.Stop()
		if !ss.report.Graceful {
			ss.t.s.mu.Lock()
			ss.t.s.slowStops = append(ss.t.s.slowStops, fmt.Sprintf("in %s: %d process(es) killed", ss.t.name, ss.report.Killed))
			ss.t.s.mu.Unlock()
		}
		if v := ss.p.Violation(); v != nil {
			ex := ss.excerpt(excerptLines)
			ss.t.s.addViolation(ss.t, v, ex)
			if !strings.Contains(ss.t.reason, "protocol violation "+v.Rule) {
				ss.t.fail(fmt.Sprintf("protocol violation %s: %s", v.Rule, v.Detail))
			}
			if len(ss.t.wire) == 0 {
				ss.t.wire = ex
			}
		}
	}
	ss.scanAfter()
}

// excerpt is the transcript's last n lines (all with Options.Verbose).
func (ss *session) excerpt(n int) []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ev := ss.events
	if ss.t.s.opts.Verbose {
		n = len(ev)
	}
	var out []string
	if len(ev) > n {
		out = append(out, fmt.Sprintf("… %d earlier lines", len(ev)-n+ss.dropped))
		ev = ev[len(ev)-n:]
	}
	return append(out, ev...)
}

// scanBefore looks, while the plugin still runs, for its descendants that
// left its process group, and kills them (with any an earlier scan saw).
func (ss *session) scanBefore(pgid int) {
	if pgid <= 0 {
		return
	}
	ss.scanGroup(pgid, "")
	ss.mu.Lock()
	pids := make([]int, 0, len(ss.escaped))
	for pid := range ss.escaped {
		pids = append(pids, pid)
	}
	ss.mu.Unlock()
	for _, pid := range pids {
		killPid(pid)
	}
}

// scanGroup records each process outside the group not reported yet.
func (ss *session) scanGroup(pgid int, during string) {
	for _, pr := range outsideGroup(pgid, ss.mark) {
		ss.mu.Lock()
		seen := ss.escaped[pr.pid]
		ss.escaped[pr.pid] = true
		ss.mu.Unlock()
		if seen {
			continue
		}
		what := pr.String()
		if during != "" {
			what += " (while " + during + " ran)"
		}
		ss.t.s.addEscape(ss.t, what)
	}
}

// runningMethods are the calls whose processes a plugin may run locally
// while they are in flight: scanWhileRunning looks at the group then, so a
// process that leaves it only for a moment (a run started with setsid, which
// has exited by the time the session ends) is still seen.
var runningMethods = map[string]bool{
	protocol.MethodLinkExec.Name: true, protocol.MethodLinkFetch.Name: true, protocol.MethodLinkPush.Name: true,
	protocol.MethodJobStart.Name: true, protocol.MethodJobStop.Name: true,
	protocol.MethodHostAcquire.Name: true, protocol.MethodHostRelease.Name: true,
}

// scanEvery is how often the group is looked at while such a call runs.
const scanEvery = 20 * time.Millisecond

// track keeps the set of running calls from the transcript (ss.mu held):
// a request of runningMethods adds its id, the reply to it removes it.
func (ss *session) track(e caller.Event) {
	if e.Line == nil {
		return
	}
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(e.Line, &env) != nil || len(env.ID) == 0 {
		return
	}
	switch {
	case e.Dir == caller.Out && runningMethods[env.Method]:
		ss.running[string(env.ID)] = env.Method
		select {
		case ss.wake <- struct{}{}:
		default:
		}
	case e.Dir == caller.In && env.Method == "":
		delete(ss.running, string(env.ID))
	}
}

// scanWhileRunning looks for processes outside the plugin's group every
// scanEvery while a running call is in flight, until the session ends.
func (ss *session) scanWhileRunning() {
	for {
		select {
		case <-ss.quit:
			return
		case <-ss.wake:
		}
		for {
			ss.mu.Lock()
			var during string
			for _, m := range ss.running {
				during = m
				break
			}
			pgid := ss.pgid
			if ss.p != nil {
				pgid = ss.p.Pgid()
			}
			ss.mu.Unlock()
			if during == "" {
				break
			}
			if pgid > 0 {
				ss.scanGroup(pgid, during)
			}
			select {
			case <-ss.quit:
				return
			case <-time.After(scanEvery):
			}
		}
	}
}

// scanAfter looks, once the group is gone, for a process that still
// carries the session's mark, and records a canary leak.
func (ss *session) scanAfter() {
	for _, pr := range marked(ss.mark) {
		ss.t.s.addEscape(ss.t, pr.String()+" (still running after the plugin's group was stopped)")
		killPid(pr.pid)
	}
	ss.mu.Lock()
	leak := ss.leak
	ss.mu.Unlock()
	if leak != "" {
		ss.t.s.mu.Lock()
		ss.t.s.leaks = append(ss.t.s.leaks, observed{check: ss.t.name, text: leak})
		ss.t.s.mu.Unlock()
	}
}

func (s *suite) addViolation(t *T, v *caller.Violation, wire []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, observed{check: t.name, rule: v.Rule, text: v.Error(), wire: wire})
}

func (s *suite) addEscape(t *T, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.escapes = append(s.escapes, observed{check: t.name, text: what})
}
