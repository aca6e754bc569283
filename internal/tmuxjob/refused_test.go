package tmuxjob_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// failingRunner answers every run with err, running nothing: a Runner's
// refusal or failure before the host saw the run, which a real host cannot
// be made to show on demand (a container vanishing between the host check
// and the start). The real refusal is backend/ssh's
// TestJobStartTooLongForTheCommandLine, on a real sshd.
type failingRunner struct{ err error }

func (f failingRunner) Run(context.Context, []string, []byte) ([]byte, []byte, int, error) {
	return nil, nil, -1, f.err
}

// TestStartRefusedOnlyForLength: job.start answers permanent, naming
// spec.cmd, only when the Runner refused the run for its length
// (ErrTooLong); any other Runner error, a permanent one included (a
// container gone mid-start), leaves the start's outcome unknown and never
// blames spec.cmd.
func TestStartRefusedOnlyForLength(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		kind protocol.Kind
		cmd  bool // the message names spec.cmd
	}{
		{"too-long", protocol.Wrap(protocol.Permanent, tmuxjob.ErrTooLong, "the run's command line is 200000 bytes"), protocol.Permanent, true},
		{"wrapped-too-long", fmt.Errorf("runner: %w", protocol.Wrap(protocol.Permanent, tmuxjob.ErrTooLong, "over the bound")), protocol.Permanent, true},
		{"other-permanent", protocol.Errorf(protocol.Permanent, "container abc is gone"), protocol.UnknownOutcome, false},
		{"transport", errors.New("connection reset"), protocol.UnknownOutcome, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, err := tmuxjob.New(failingRunner{c.err}, tmuxjob.Options{Root: "/nonexistent/mu-jobs", Kind: "tmux", Channel: "tmux-test"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = j.Start(context.Background(), protocol.JobStartParams{Base: base("k"), Key: "k", Spec: spec("true")})
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Kind != c.kind || strings.Contains(pe.Message, "spec.cmd") != c.cmd {
				t.Fatalf("job.start when the Runner answers %v: %v, want kind %s, naming spec.cmd: %v", c.err, err, c.kind, c.cmd)
			}
		})
	}
}

// The bound is one exec argument's (tmuxjob.MaxArg: MAX_ARG_STRLEN with its
// NUL), real on this Linux host through LocalRunner: a spec.cmd exactly at
// it starts and its agent runs; one byte over is refused before anything
// runs. Under an adapter, which runs spec.cmd with ` "$@"` appended in one
// argument, the bound is that much less, and a turn at it runs the CLI.
func TestStartArgBound(t *testing.T) {
	t.Run("agent", func(t *testing.T) {
		h := newHost(t)
		pre := "exec sh " + words.ShQuote(h.agent) + " #"
		pad := func(n int) string { return pre + strings.Repeat("x", n-len(pre)) }
		refusedForLength(t, h.jobs, h.root, spec(pad(tmuxjob.MaxArg+1)), tmuxjob.MaxArg)
		if _, err := h.jobs.Start(waitfor.Context(t, time.Minute), protocol.JobStartParams{Base: base("at"), Key: "at", Spec: spec(pad(tmuxjob.MaxArg))}); err != nil {
			t.Fatalf("job.start of a spec.cmd of %d bytes: %v", tmuxjob.MaxArg, err)
		}
		h.waitBaseline(t, "at")
	})
	t.Run("adapter", func(t *testing.T) {
		a := newAdapterHost(t)
		max := tmuxjob.MaxArg - len(` "$@"`)
		sp := func(n int) protocol.JobSpec {
			s := spec(": " + strings.Repeat("x", n-len(": ; claude")) + "; claude")
			s.Harness, s.Cwd = "claude-print", a.cwd
			s.Env = map[string]string{"PATH": a.bin + ":" + os.Getenv("PATH"), "HOME": a.root}
			return s
		}
		refusedForLength(t, a.jobs, a.root, sp(max+1), max)
		jt := a.startSpec(t, "at", sp(max))
		a.send(t, "at", "m1", "hi")
		if o := a.settled(t, jt, 0); o.LastText != "claude[1]: hi" || o.LastError != "" {
			t.Fatalf("a turn of the CLI run by a spec.cmd of %d bytes: %+v", max, o)
		}
	})
}

// The start's other values are one argument each of its script's exec: one
// over tmuxjob.MaxArg is refused the same way, naming it, before any run.
func TestStartArgBoundOtherValues(t *testing.T) {
	long := strings.Repeat("x", tmuxjob.MaxArg+1)
	for _, c := range []struct {
		name string
		mod  func(*protocol.JobStartParams)
	}{
		{"spec.cwd", func(p *protocol.JobStartParams) { p.Spec.Cwd = long }},
		{"the key", func(p *protocol.JobStartParams) { p.Key = long }},
		{"spec.workstream and spec.name", func(p *protocol.JobStartParams) { p.Spec.Name = long }},
	} {
		ran := errors.New("the Runner was asked")
		j, err := tmuxjob.New(failingRunner{ran}, tmuxjob.Options{Root: "/nonexistent/mu-jobs", Kind: "tmux", Channel: "tmux-test"})
		if err != nil {
			t.Fatal(err)
		}
		p := protocol.JobStartParams{Base: base("k"), Key: "k", Spec: spec("true")}
		c.mod(&p)
		_, err = j.Start(context.Background(), p)
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Kind != protocol.Permanent || !errors.Is(err, tmuxjob.ErrTooLong) || errors.Is(err, ran) ||
			!strings.HasPrefix(pe.Message, "job.start: "+c.name+" is ") {
			t.Errorf("job.start with %s over the bound: %v, want permanent, ErrTooLong, naming it", c.name, err)
		}
	}
}

// refusedForLength: job.start of s is refused as permanent, wrapping
// ErrTooLong, naming spec.cmd, its size and max, with nothing made under
// root (no job directory, no tmux server).
func refusedForLength(t *testing.T, j *tmuxjob.Jobs, root string, s protocol.JobSpec, max int) {
	t.Helper()
	_, err := j.Start(waitfor.Context(t, time.Minute), protocol.JobStartParams{Base: base("over"), Key: "over", Spec: s})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Kind != protocol.Permanent || !errors.Is(err, tmuxjob.ErrTooLong) ||
		!strings.Contains(pe.Message, fmt.Sprintf("spec.cmd is %d bytes, over the %d bytes", len(s.Cmd), max)) {
		t.Fatalf("job.start of a spec.cmd of %d bytes: %v, want permanent, ErrTooLong, naming spec.cmd, %d and %d", len(s.Cmd), err, len(s.Cmd), max)
	}
	left, _ := filepath.Glob(filepath.Join(root, "jobs", "*"))
	if sock, _ := filepath.Glob(filepath.Join(root, "tmux.sock")); len(left) > 0 || len(sock) > 0 {
		t.Fatalf("left by the refused start: %v %v", left, sock)
	}
}
