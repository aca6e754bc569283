package drive

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/testlog"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// Raw is a plugin started by StartRaw: exact lines both ways. Its Send,
// Recv and Expect fail the test instead of returning an error; the
// caller.Raw's own stay reachable as r.Raw.Send and r.Raw.Recv.
type Raw struct {
	*caller.Raw
	Stderr *testlog.LockedBuffer
	Wire   *caller.Record
	t      testing.TB
}

// StartRaw starts cfg through caller.StartRaw and stops it when the test
// ends.
func StartRaw(t testing.TB, cfg caller.Config) *Raw {
	t.Helper()
	r := &Raw{Stderr: &testlog.LockedBuffer{}, Wire: &caller.Record{}, t: t}
	keep(&cfg, r.Stderr, r.Wire)
	cr, err := caller.StartRaw(context.Background(), cfg)
	if err != nil {
		t.Fatalf("starting mu-plugin-%s: %v", cfg.Name, err)
	}
	r.Raw = cr
	t.Cleanup(func() {
		cr.Stop()
		checkStderr(t, cfg.Name, r.Stderr.String())
	})
	return r
}

// Send writes line (a newline is added) in one write.
func (r *Raw) Send(line string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitfor.Patience)
	defer cancel()
	if err := r.Raw.Send(ctx, line); err != nil {
		r.t.Fatalf("send: %v\n%s", err, explain(r.Wire, r.Stderr))
	}
}

// Recv returns the plugin's next line; a line over 1 MiB, the end of its
// stdout, or none within waitfor.Patience fails the test.
func (r *Raw) Recv() string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitfor.Patience)
	defer cancel()
	l, err := r.Raw.Recv(ctx)
	switch {
	case errors.Is(err, protocol.ErrLineTooLong):
		r.t.Fatalf("the plugin wrote a line over 1 MiB\n%s", explain(r.Wire, r.Stderr))
	case err == io.EOF:
		r.t.Fatalf("the plugin's stdout ended\n%s", explain(r.Wire, r.Stderr))
	case err != nil:
		r.t.Fatalf("no line from the plugin: %v\n%s", err, explain(r.Wire, r.Stderr))
	}
	return string(l)
}

// Expect receives the next line and fails the test unless it is want,
// byte for byte.
func (r *Raw) Expect(want string) {
	r.t.Helper()
	if got := r.Recv(); got != want {
		r.t.Fatalf("got  %s\nwant %s", got, want)
	}
}
