package sandboxtest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// ArgMax is the longest single argument a Linux exec takes on the
// providers' hosts: MAX_ARG_STRLEN (32 pages of 4 KiB, 131072 bytes) with
// its terminating NUL, as measured in the test image.
const ArgMax = 128<<10 - 1

// CmdArgBound: a job.start on host whose spec.cmd is one byte over
// ArgMax is refused up front, permanent, naming spec.cmd and both sizes,
// with nothing left on the host (no job directory, no tmux server, no
// process holding the command; the fenced lookup then answers none); one
// whose spec.cmd is exactly ArgMax bytes starts and its agent reports
// ready. sp runs a harness-following agent with no adapter (its command
// padded here with a comment); kind is the job kind of the plugin.
func CmdArgBound(t *testing.T, ctx context.Context, p *caller.Plugin, host protocol.Target, sp protocol.JobSpec, kind string) {
	t.Helper()
	pad := func(n int) string {
		c := sp.Cmd + " #"
		return c + strings.Repeat("x", n-len(c))
	}
	over := sp
	over.Cmd = pad(ArgMax + 1)
	key := "over-" + NewPrefix()
	_, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: key, Spec: over})
	var re *caller.RemoteError
	if !errors.As(err, &re) || re.Kind != protocol.Permanent || !strings.Contains(re.Message, "spec.cmd") ||
		!strings.Contains(re.Message, strconv.Itoa(ArgMax+1)) || !strings.Contains(re.Message, strconv.Itoa(ArgMax)) {
		t.Fatalf("job.start of a spec.cmd of %d bytes: %v, want permanent naming spec.cmd, %d and %d", ArgMax+1, err, ArgMax+1, ArgMax)
	}
	// Nothing left: no job's directory, no tmux, no process holding the
	// padding (the pattern below does not match itself).
	left := `ls -A .mu-jobs/jobs 2>/dev/null; cat /proc/[0-9]*/comm 2>/dev/null | grep tmux; grep -l 'x\{64\}' /proc/[0-9]*/cmdline 2>/dev/null; :`
	r, err := p.Exec(ctx, host, left, ".", time.Minute)
	if err != nil || r.ExitCode == nil || *r.ExitCode != 0 || r.Stdout != "" {
		t.Fatalf("left on the host after the refused start: %+v %v", r, err)
	}
	lr, err := caller.Invoke(ctx, p, protocol.MethodJobLookup, protocol.LookupParams{Base: protocol.Base{Target: host}, Key: key, Fence: true})
	if err != nil || !lr.None {
		t.Fatalf("the fenced lookup of the refused start: %+v %v, want none", lr, err)
	}

	at := sp
	at.Cmd = pad(ArgMax)
	key = "at-" + NewPrefix()
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: key, Spec: at})
	if err != nil {
		t.Fatalf("job.start of a spec.cmd of %d bytes: %v", ArgMax, err)
	}
	jt := drive.JobTarget(host, kind, key, res.Handle, sp.Workstream, sp.Name)
	drive.Baseline(t, ctx, p, jt)
	if _, err := caller.Invoke(ctx, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: key}); err != nil {
		t.Fatalf("job.stop: %v", err)
	}
}
