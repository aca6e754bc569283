package caller

import (
	"context"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/testlog"
	"github.com/mu-org/mu-plugins/protocol"
)

type harness struct {
	cfg    Config
	tr     *Record
	stderr *testlog.LockedBuffer
}

// newHarness configures a plugin named name in mode (see runTestPlugin).
func newHarness(t testing.TB, name, mode string, env ...string) *harness {
	h := &harness{tr: &Record{}, stderr: &testlog.LockedBuffer{}}
	h.cfg = Config{
		Name: name,
		Argv: []string{register(t, name)},
		// atexit_sleep_ms: a -race child otherwise sleeps 1 s at exit.
		Env:        append([]string{envMode + "=" + mode, "GORACE=atexit_sleep_ms=0"}, env...),
		Transcript: h.tr.Add,
		Stderr:     h.stderr,
	}
	return h
}

// startGood is the well-behaved test plugin, started: its harness and
// the running plugin.
func startGood(t testing.TB) (*harness, *Plugin) {
	t.Helper()
	h := newHarness(t, "good", "good")
	return h, h.start(t)
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
