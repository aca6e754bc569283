package tmuxjob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/mu-org/mu-plugins/internal/proc"
	"github.com/mu-org/mu-plugins/protocol"
)

// Runner runs argv on the job host and returns its output and exit code.
// err is reserved for a run that could not be carried out or whose end is
// unknown (the transport failed, ctx ended): the package then reports
// unknown, never a definite answer. A non-zero exit is not an error.
//
// A Runner that refuses a run because its command line passes what the
// host takes (an SSH command line past MAX_ARG_STRLEN) returns an error
// that wraps ErrTooLong, before starting anything: job.start then answers
// permanent, naming spec.cmd (refusedRun). Any other error, a permanent
// one included, leaves the start's outcome unknown. A start none of whose
// arguments could be one argument of an exec (MaxArg) is refused the same
// way by job.start itself, before any Runner is asked (startFits).
//
// The docker backend maps it to an exec in the container; LocalRunner runs
// argv on this machine. Every script this package sends is a constant
// passed as argv (`/bin/sh -c SCRIPT mu-tmuxjob ARGS…`); values travel as
// further arguments or on stdin, never spliced into a command line.
type Runner interface {
	Run(ctx context.Context, argv []string, stdin []byte) (stdout, stderr []byte, exitCode int, err error)
}

// LocalRunner runs argv on this machine through internal/proc, so a
// cancelled run's whole tree is stopped. Env is the environment the runs
// get (and so the tmux server and the jobs it starts): nil means
// MinimalEnv(), never the plugin's own environment, so no variable of the
// plugin's (a secret, the proc mark) reaches a job.
//
// It is for tests and for a host that is this machine: the tmux server it
// starts daemonizes, which a plugin must not do inside mu's process group.
type LocalRunner struct {
	Env []string
}

// MinimalEnv is PATH, HOME, TERM and LANG from this process, nothing else.
func MinimalEnv() []string {
	env := []string{"PATH=" + getenv("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOME=" + getenv("HOME", "/root")}
	env = append(env, "TERM="+getenv("TERM", "xterm-256color"))
	if v := os.Getenv("LANG"); v != "" {
		env = append(env, "LANG="+v)
	}
	return env
}

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Run runs argv and waits for it; when ctx ends first the run's tree is
// killed and ctx's error returned.
func (l LocalRunner) Run(ctx context.Context, argv []string, stdin []byte) ([]byte, []byte, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, -1, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = l.Env
	if cmd.Env == nil {
		cmd.Env = MinimalEnv()
	}
	var out, errb bytes.Buffer
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &errb
	res, err := proc.Run(ctx, cmd, proc.Options{})
	if err != nil {
		return out.Bytes(), errb.Bytes(), -1, err
	}
	if res.Stopped {
		return out.Bytes(), errb.Bytes(), -1, ctx.Err()
	}
	return out.Bytes(), errb.Bytes(), res.ExitCode, nil
}

// ErrTooLong is what a refusal of a run too long for the host wraps (a
// Runner's, whose command line passes the host's bound, or job.start's
// own, startFits): nothing was run.
var ErrTooLong = errors.New("the run's command line is longer than the host takes")

// MaxArg is the longest single argument an exec takes on a Linux host:
// MAX_ARG_STRLEN (32 pages: 128 KiB on a 4 KiB-page host, the smallest)
// with its terminating NUL. Every Runner's run reaches the host as an exec
// of its argv (`/bin/sh -c SCRIPT mu-tmuxjob ARGS…`), whatever carries it
// there (an exec channel's `exec "$@"`, a login shell, a fork here), so no
// argument of a run can be longer on any of them.
const MaxArg = 128<<10 - 1

// cmdSuffix is what a harness adapter appends to spec.cmd in the one
// argument it runs it as (adapters/lib.sh's run_cli, print.sh's run_bg:
// `sh -c "$CMD"' "$@"'`).
const cmdSuffix = ` "$@"`

// startFits refuses, before anything runs, a start whose spec.cmd (or
// another value of its start) is longer than one exec argument takes on
// the host: spec.cmd is one in the start script's run and in the wrapper's
// `sh -c` (or an adapter's, with cmdSuffix), and cwd, key and agent are
// the start's arguments. Permanent, wrapping ErrTooLong. A Runner may
// bound its runs further (ssh's command line).
func startFits(p protocol.JobStartParams, agent, harness string) error {
	cmdMax, how := MaxArg, "the start's script and the wrapper's `sh -c` each take it as one argument"
	if harness != "" {
		cmdMax -= len(cmdSuffix)
		how = "the " + harness + " adapter runs it as one argument with `" + cmdSuffix + "` appended"
	}
	for _, f := range []struct {
		name, v, how string
		max          int
	}{
		{"spec.cmd", p.Spec.Cmd, how, cmdMax},
		{"spec.cwd", p.Spec.Cwd, "the start's script takes it as one argument", MaxArg},
		{"the key", p.Key, "the start's script takes it as one argument", MaxArg},
		{"spec.workstream and spec.name", agent, "the start's script takes them as one argument", MaxArg},
	} {
		if len(f.v) > f.max {
			return &protocol.Error{Kind: protocol.Permanent, Err: ErrTooLong, Message: fmt.Sprintf("job.start: %s is %d bytes, over the %d bytes the host takes: %s, "+
				"and Linux takes at most 128 KiB in one, its NUL included (MAX_ARG_STRLEN); nothing was run", f.name, len(f.v), f.max, f.how)}
		}
	}
	return nil
}

// refusedRun is the Runner's refusal err carries (ErrTooLong: nothing was
// run), or nil.
func refusedRun(err error) *protocol.Error {
	var pe *protocol.Error
	if errors.Is(err, ErrTooLong) && errors.As(err, &pe) {
		return pe
	}
	return nil
}
