package caller

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil"
	"github.com/mu-org/mu-plugins/protocol"
)

// transcript records every event.
type transcript struct {
	mu     sync.Mutex
	events []Event
}

func (tr *transcript) add(e Event) {
	tr.mu.Lock()
	tr.events = append(tr.events, e)
	tr.mu.Unlock()
}

func (tr *transcript) all() []Event {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]Event(nil), tr.events...)
}

// lines returns the lines of one direction.
func (tr *transcript) lines(d Direction) []string {
	var out []string
	for _, e := range tr.all() {
		if e.Dir == d && e.Line != nil {
			out = append(out, string(e.Line))
		}
	}
	return out
}

// outWith returns the outbound lines containing s.
func (tr *transcript) outWith(s string) []string {
	var out []string
	for _, l := range tr.lines(Out) {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

type harness struct {
	cfg    Config
	tr     *transcript
	stderr *testutil.LockedBuffer
}

// newHarness configures a plugin named name in mode (see runTestPlugin).
func newHarness(t testing.TB, name, mode string, env ...string) *harness {
	h := &harness{tr: &transcript{}, stderr: &testutil.LockedBuffer{}}
	h.cfg = Config{
		Name: name,
		Argv: []string{register(t, name)},
		// atexit_sleep_ms: a -race child otherwise sleeps 1 s at exit.
		Env:        append([]string{envMode + "=" + mode, "GORACE=atexit_sleep_ms=0"}, env...),
		Transcript: h.tr.add,
		Stderr:     h.stderr,
	}
	return h
}

func (h *harness) start(t testing.TB) *Plugin {
	t.Helper()
	p, err := Start(context.Background(), h.cfg)
	if err != nil {
		t.Fatalf("Start: %v (stderr: %s)", err, h.stderr.String())
	}
	t.Cleanup(func() { p.Stop() })
	return p
}

var tgt = protocol.Target{Host: protocol.HostRef{Name: "box"}}

func execParams(script string) protocol.ExecParams {
	return protocol.ExecParams{Base: protocol.Base{Target: tgt}, Script: script, Cwd: ".", TimeoutMs: 1000}
}
