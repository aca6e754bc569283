package tmuxjob_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/backend/tmuxjob"
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
