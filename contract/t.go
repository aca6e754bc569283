package contract

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// errStop ends a check early (Fatalf, Skipf).
var errStop = errors.New("check stopped")

// T is one check's run.
type T struct {
	ctx      context.Context
	s        *suite
	name     string
	status   Status
	reason   string
	wire     []string
	sessions []*session
	cleanups []func()
	tmpN     int
}

// runCheck runs one check to its end: every plugin it started is stopped
// and scanned, whatever happened.
func (s *suite) runCheck(ctx context.Context, c check) (res Result) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	t := &T{ctx: ctx, s: s, name: c.name, status: Pass}
	start := time.Now()
	defer func() {
		t.runCleanups()
		for _, ss := range t.sessions {
			ss.end()
		}
		res = Result{Name: c.name, Status: t.status, Reason: t.reason, Wire: t.wire, Elapsed: time.Since(start)}
	}()
	defer func() {
		if r := recover(); r != nil && r != errStop { //nolint:errorlint // sentinel identity
			t.fail(fmt.Sprintf("the check panicked (a bug in the suite): %v", r))
			t.wire = strings.Split(strings.TrimSpace(string(debug.Stack())), "\n")
		}
	}()
	if !c.summary {
		if miss := t.missingSeams(c.needs); miss != "" {
			t.Skipf("the plugin declares no %s seam", miss)
		}
	}
	c.run(t)
	return
}

// missingSeams names the first needed seam the plugin does not declare.
func (t *T) missingSeams(needs []string) string {
	if len(needs) == 0 {
		return ""
	}
	d := t.Decl()
	for _, n := range needs {
		ok := false
		switch n {
		case seamLink:
			ok = d.Seams.Link != nil
		case seamHost:
			ok = d.Seams.Host != nil
		case seamJob:
			ok = d.Seams.Job != nil
		case seamChannel:
			ok = d.Seams.Channel != nil && d.Seams.Job != nil
		}
		if !ok {
			return n
		}
	}
	return ""
}

// fail records a failure; the first reason wins, later ones are appended.
func (t *T) fail(reason string) {
	if t.status == Fail {
		t.reason += "; " + reason
		return
	}
	t.status, t.reason = Fail, reason
}

// Errorf records a failure and lets the check go on.
func (t *T) Errorf(format string, args ...any) { t.fail(fmt.Sprintf(format, args...)) }

// Fatalf records a failure and ends the check.
func (t *T) Fatalf(format string, args ...any) {
	t.fail(fmt.Sprintf(format, args...))
	panic(errStop)
}

// Skipf ends the check as skipped, unless it already failed.
func (t *T) Skipf(format string, args ...any) {
	if t.status != Fail {
		t.status, t.reason = Skip, fmt.Sprintf(format, args...)
	}
	panic(errStop)
}

// Ctx is the check's context.
func (t *T) Ctx() context.Context { return t.ctx }

// Cleanup runs fn when the check ends, before its plugins are stopped.
func (t *T) Cleanup(fn func()) { t.cleanups = append(t.cleanups, fn) }

// runCleanups runs the cleanups registered so far, now.
func (t *T) runCleanups() {
	for len(t.cleanups) > 0 {
		fn := t.cleanups[len(t.cleanups)-1]
		t.cleanups = t.cleanups[:len(t.cleanups)-1]
		fn()
	}
}

// TempDir is a fresh local directory for this check.
func (t *T) TempDir() string {
	t.tmpN++
	d, err := os.MkdirTemp(t.s.tmp, strings.ReplaceAll(t.name, "/", "-")+"-")
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	return d
}

// Unique returns a name unique in this run, for keys, msgIds and paths.
func (t *T) Unique(prefix string) string {
	t.s.mu.Lock()
	t.s.seq++
	n := t.s.seq
	t.s.mu.Unlock()
	return fmt.Sprintf("%s-%s-%d", prefix, t.s.run, n)
}

// Decl is the plugin's declaration, from one handshake per run. A plugin
// mu refuses fails every check that needs it.
func (t *T) Decl() protocol.InitializeResult {
	t.s.mu.Lock()
	d, err := t.s.decl, t.s.declErr
	t.s.mu.Unlock()
	if d == nil && err == nil {
		var p *caller.Plugin
		p, err = t.tryStart()
		if err == nil {
			dd := p.Declaration()
			d = &dd
		}
		t.s.mu.Lock()
		t.s.decl, t.s.declErr = d, err
		t.s.mu.Unlock()
	}
	if err != nil {
		t.Fatalf("mu refuses the plugin: %v", err)
	}
	return *d
}

// config is the caller configuration every session shares.
func (t *T) config(ss *session) caller.Config {
	env := append([]string{}, t.s.opts.Env...)
	env = append(env, CanaryVar+"="+t.s.canary, MarkVar+"="+ss.mark)
	return caller.Config{
		Name:       t.s.opts.Name,
		Argv:       t.s.opts.Argv,
		Env:        env,
		Stderr:     ss.stderrWriter(),
		Transcript: ss.record,
	}
}

// Start starts a fresh plugin process the way mu does (registration
// checks, handshake, every load rule); the check ends failed if mu would
// refuse it. It is stopped when the check ends (or by Stop).
func (t *T) Start(mods ...func(*caller.Config)) *caller.Plugin {
	p, err := t.tryStart(mods...)
	if err != nil {
		t.Fatalf("mu refuses the plugin: %v", err)
	}
	return p
}

// tryStart is Start returning the refusal.
func (t *T) tryStart(mods ...func(*caller.Config)) (*caller.Plugin, error) {
	ss := t.newSession()
	cfg := t.config(ss)
	for _, m := range mods {
		m(&cfg)
	}
	p, err := caller.Start(t.ctx, cfg)
	if err != nil {
		ss.endedWith(err)
		return nil, err
	}
	ss.mu.Lock()
	ss.p = p
	ss.pgid = p.Pgid()
	ss.mu.Unlock()
	return p, nil
}

// Stop runs mu's stop sequence on p now and scans for what it left.
func (t *T) Stop(p *caller.Plugin) caller.StopReport {
	for _, ss := range t.sessions {
		if ss.p == p {
			ss.end()
			return ss.report
		}
	}
	return p.Stop()
}

// excerpt is the transcript excerpt of the check's latest session, for a
// failure the check itself found.
func (t *T) excerpt() []string {
	if len(t.sessions) == 0 {
		return nil
	}
	return t.sessions[len(t.sessions)-1].excerpt(excerptLines)
}

// Failf fails the check with the latest session's wire excerpt and ends it.
func (t *T) Failf(format string, args ...any) {
	if len(t.wire) == 0 {
		t.wire = t.excerpt()
	}
	t.Fatalf(format, args...)
}

// Check fails the check (with the wire excerpt), going on, when ok is false.
func (t *T) Check(ok bool, format string, args ...any) bool {
	if !ok {
		if len(t.wire) == 0 {
			t.wire = t.excerpt()
		}
		t.Errorf(format, args...)
	}
	return ok
}

// waitUntil polls cond every 20 ms until it holds or d passes.
func waitUntil(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
