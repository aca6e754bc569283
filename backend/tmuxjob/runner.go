package tmuxjob

import (
	"bytes"
	"context"
	"errors"
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
// one included, leaves the start's outcome unknown.
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

// ErrTooLong is what a Runner's refusal of a run whose command line passes
// the host's bound wraps: nothing was run.
var ErrTooLong = errors.New("the run's command line is longer than the host takes")

// refusedRun is the Runner's refusal err carries (ErrTooLong: nothing was
// run), or nil.
func refusedRun(err error) *protocol.Error {
	var pe *protocol.Error
	if errors.Is(err, ErrTooLong) && errors.As(err, &pe) {
		return pe
	}
	return nil
}
