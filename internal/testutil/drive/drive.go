// Package drive is how a test drives a plugin: through protocol/caller,
// as mu does. Start gives typed calls with every reply checked (Call,
// Err); StartRaw exact lines both ways, for the tests of the wire rules.
// Either keeps the plugin's stderr and wire for the test's checks and its
// failure messages, stops the plugin when the test ends, and then fails
// the test if the plugin's stderr shows a data race, a panic or a fatal
// runtime error (a plugin built or run under -race reports there).
package drive

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/testlog"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// Plugin is a plugin started by Start.
type Plugin struct {
	*caller.Plugin
	Stderr *testlog.LockedBuffer
	Wire   *caller.Record
	// Budget is the least whole budget of a call made by Call and Err; a
	// method's own default (caller's: its timeoutMs and a grace for a run,
	// 10 s otherwise) when larger. Zero keeps the defaults.
	Budget time.Duration
}

// Start starts cfg through caller.Start (the handshake bounded by a
// minute, whatever cfg says) and stops it when the test ends. cfg's own
// Stderr and Transcript still get their copies.
func Start(t testing.TB, cfg caller.Config) *Plugin {
	t.Helper()
	p := &Plugin{Stderr: &testlog.LockedBuffer{}, Wire: &caller.Record{}}
	keep(&cfg, p.Stderr, p.Wire)
	ctx, cancel := context.WithTimeout(context.Background(), waitfor.Patience)
	defer cancel()
	cp, err := caller.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("starting mu-plugin-%s: %v\nstderr:\n%s", cfg.Name, err, Tail(p.Stderr.String()))
	}
	p.Plugin = cp
	t.Cleanup(func() {
		cp.Stop()
		checkStderr(t, cfg.Name, p.Stderr.String())
	})
	return p
}

// keep points cfg's Stderr and Transcript at stderr and wire, besides
// where they already went.
func keep(cfg *caller.Config, stderr *testlog.LockedBuffer, wire *caller.Record) {
	if cfg.Stderr != nil {
		cfg.Stderr = io.MultiWriter(stderr, cfg.Stderr)
	} else {
		cfg.Stderr = stderr
	}
	if tr := cfg.Transcript; tr != nil {
		cfg.Transcript = func(e caller.Event) { wire.Add(e); tr(e) }
	} else {
		cfg.Transcript = wire.Add
	}
}

// checkStderr fails the test when a plugin's stderr shows it crashed or
// raced.
func checkStderr(t testing.TB, name, stderr string) {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "WARNING: DATA RACE") || strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			t.Errorf("mu-plugin-%s: %s\nstderr:\n%s", name, l, Tail(stderr))
			return
		}
	}
}

// budget is the call's whole budget: p.Budget, or the method's default
// when larger.
func (p *Plugin) budget(method string, params any) time.Duration {
	r, err := caller.NewRequest(method, params)
	if err != nil {
		return p.Budget // the call fails not sent, saying why
	}
	return max(p.Timeout(r), p.Budget)
}

// Call invokes m with params (caller.Invoke) and returns its result, of
// m's result type; any error fails the test, with the wire's tail and
// stderr.
func Call[P, R any](t testing.TB, p *Plugin, m protocol.Method[P, R], params P) R {
	t.Helper()
	v, err := caller.InvokeWithin(context.Background(), p, m, params, p.budget(m.Name, params))
	if err != nil {
		t.Fatalf("%s: %v\n%s", m.Name, err, p.Explain())
	}
	return v
}

// Try invokes m with params and returns its result, or its error reply;
// any other error (no valid answer) fails the test.
func Try[P, R any](t testing.TB, p *Plugin, m protocol.Method[P, R], params P) (R, *caller.RemoteError) {
	t.Helper()
	v, err := caller.InvokeWithin(context.Background(), p, m, params, p.budget(m.Name, params))
	var re *caller.RemoteError
	if err != nil && !errors.As(err, &re) {
		t.Fatalf("%s: %v, want an answer\n%s", m.Name, err, p.Explain())
	}
	return v, re
}

// Err invokes m with params and returns its error reply, nil on success;
// any other error (no valid answer) fails the test.
func Err[P, R any](t testing.TB, p *Plugin, m protocol.Method[P, R], params P) *caller.RemoteError {
	t.Helper()
	_, re := Try(t, p, m, params)
	return re
}

// TryRaw sends method with params as given (a map may break the schema:
// the tests of a plugin's own checks) and returns the result as sent, or
// its error reply; any other error (no valid answer) fails the test.
func TryRaw(t testing.TB, p *Plugin, method string, params any) (json.RawMessage, *caller.RemoteError) {
	t.Helper()
	v, err := p.Call(context.Background(), method, params, p.budget(method, params))
	var re *caller.RemoteError
	if err != nil && !errors.As(err, &re) {
		t.Fatalf("%s: %v, want an answer\n%s", method, err, p.Explain())
	}
	return v, re
}

// Explain is the tail of the wire and of stderr, for a failure message.
func (p *Plugin) Explain() string {
	return explain(p.Wire, p.Stderr)
}

func explain(wire *caller.Record, stderr *testlog.LockedBuffer) string {
	var b strings.Builder
	for _, e := range wire.Events() {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return "wire:\n" + Tail(b.String()) + "\nstderr:\n" + Tail(stderr.String())
}

// Tail is s's last 4,000 bytes, for a failure message.
func Tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}
