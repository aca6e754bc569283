package docker

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/backend/tmuxjob"
)

// runnerTimeout bounds one Runner run when ctx sets no deadline: the
// longest tmuxjob run (a watch's batch of looks, a stop's kill rounds) ends
// well inside it.
const runnerTimeout = 10 * time.Minute

// runner is a tmuxjob.Runner over ctr's pooled exec channels: argv and
// stdin travel length-prefixed on the channel's stdin (agentScript), never
// spliced into a command line, so a run costs a round trip on a live
// channel (well under a millisecond) instead of an API exec (~50 ms).
type runner struct {
	b   *Backend
	ctr string
}

// Runner is the tmuxjob.Runner for container ctr, over its pooled exec
// channels. Its runs are marked like link.exec's: a run's leftovers are
// killed when it ends, and a cancelled run is killed before Run returns.
func (b *Backend) Runner(ctr string) tmuxjob.Runner { return runner{b, ctr} }

// Run runs argv in the container, from the login directory, with stdin.
// err is the Engine's (or ctx's): the run's end is then unknown.
func (r runner) Run(ctx context.Context, argv []string, stdin []byte) ([]byte, []byte, int, error) {
	if len(argv) == 0 {
		return nil, nil, -1, errors.New("empty argv")
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, nil, -1, errors.New("an argument holds a NUL byte")
		}
	}
	sep, err := argvSep(argv)
	if err != nil {
		return nil, nil, -1, err
	}
	code, run, err := r.b.do(ctx, r.ctr, runnerTimeout, func(s *session) (*run, error) { return s.startArgv(argv, sep, stdin, ".") })
	if err != nil {
		return nil, nil, -1, err
	}
	if code == nil {
		return nil, nil, -1, errors.New("the run timed out after " + runnerTimeout.String())
	}
	if run.out.cut() || run.err.cut() {
		return nil, nil, -1, errors.New("the run's output passed 1 MiB")
	}
	return run.out.kept, run.err.kept, *code, nil
}
