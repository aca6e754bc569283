package tmuxjob

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// LocalView is the view when the host is this machine: it follows the
// job's log (its terminal output, escape sequences and all) from the start.
// It needs no terminal on stdin.
func LocalView(_ string, logPath string) protocol.View {
	return protocol.View{Command: "exec tail -c +1 -F " + shQuote(logPath), Env: map[string]string{}}
}

// ViewArgv is a view that runs argv (each word quoted for sh) with env: for
// a plugin's own view sub-command, e.g. ViewArgv(nil, exe, "view",
// "--container", ctr, handle).
func ViewArgv(env map[string]string, argv ...string) protocol.View {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = shQuote(a)
	}
	if env == nil {
		env = map[string]string{}
	}
	return protocol.View{Command: "exec " + strings.Join(words, " "), Env: env}
}

var handleRe = regexp.MustCompile(`^mu-([0-9a-f]{24})$`)

// followChunk is how much of the log one poll reads at most.
const followChunk = 256 << 10

// Follow is the following side of a view over the Runner: it copies the
// job's terminal output (the log that tmux's pipe-pane writes) to w from
// the start, polling for more, until the job has ended and its log is
// drained (then it writes one last line saying so and returns nil), or ctx
// ends. It needs no terminal: a view command runs it with stdin from
// /dev/null. handle is the job's handle (job.start's reply). What would
// act on the viewer's own terminal (a clipboard write, a title, a query it
// answers) is dropped, as a terminal multiplexer drops it (termFilter).
func (j *Jobs) Follow(ctx context.Context, handle string, w io.Writer) error {
	m := handleRe.FindStringSubmatch(handle)
	if m == nil {
		return fmt.Errorf("tmuxjob: %q is not a job handle", handle)
	}
	id := m[1]
	w = newTermFilter(w)
	var off int64
	idle := j.opts.Poll
	failures, reached := 0, false
	for {
		// A host never reached: the tail script first, so it fails at once.
		if reached {
			if data := j.logChunk(ctx, id, off); len(data) > 0 {
				// New output, read by offset without a script run: the tail
				// script (below) runs only when there is none, to tell whether
				// the job still lives.
				if _, err := w.Write(data); err != nil {
					return err
				}
				off += int64(len(data))
				if len(data) < followChunk && !sleep(ctx, j.opts.Poll) {
					return ctx.Err()
				}
				idle = j.opts.Poll
				continue
			}
		}
		o, err := j.run(ctx, "tail", id, nil, strconv.FormatInt(off, 10), strconv.Itoa(followChunk))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !reached { // as ssh: a host it cannot reach is said at once; retries are for a drop mid-view
				return err
			}
			failures++
			if failures > 50 {
				return err
			}
			if !sleep(ctx, time.Second) {
				return ctx.Err()
			}
			continue
		}
		failures, reached = 0, true
		if o.has("nojob") {
			return fmt.Errorf("tmuxjob: no job %s on the host", handle)
		}
		data := o.blob("data")
		if len(data) > 0 {
			if _, err := w.Write(data); err != nil {
				return err
			}
			off += int64(len(data))
			idle = j.opts.Poll
			if len(data) == followChunk {
				continue
			}
		}
		if o.get("alive") == "no" && len(data) == 0 {
			if e := o.get("exit"); e != "" {
				fmt.Fprintf(w, "\r\n[mu: the job ended, exit %s]\r\n", e)
			} else {
				fmt.Fprintf(w, "\r\n[mu: the job is gone]\r\n")
			}
			return nil
		}
		if !sleep(ctx, idle) {
			return ctx.Err()
		}
		if idle < 500*time.Millisecond {
			idle += idle / 2
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
