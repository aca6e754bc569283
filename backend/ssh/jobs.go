package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mu-org/mu-plugins/internal/outcap"
	"github.com/mu-org/mu-plugins/internal/sshclient"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// JobKind is the job seam's kind; ChannelName the channel's name under the
// plugin's own name (a mu-plugin-ssh-<suffix> registration's channel is
// ssh-<suffix>).
const (
	JobKind     = "ssh"
	ChannelName = "ssh"
)

// JobsDir is where a host keeps its jobs (tmuxjob's state root) by
// default: under the login directory of the SSH user.
const JobsDir = ".mu-jobs"

// ViewCommand is the sub-command a job's view runs (docs/ssh.md, Jobs).
const ViewCommand = "view"

// runnerTimeout bounds one Runner run when ctx sets no sooner deadline: the
// longest tmuxjob run (a watch's batch of looks, a stop's kill rounds) ends
// well inside it. The wrapper's watchdog kills the run's group past it.
const runnerTimeout = 10 * time.Minute

// runnerOutput bounds what one run may print (a view's log chunk and a
// turn record travel base64-encoded, well inside it).
const runnerOutput = 16 << 20

// maxCommandLine is the longest command line a run may have: sshd runs
// it as `SHELL -c LINE`, one argument, which Linux bounds at 128 KiB with
// its NUL (MAX_ARG_STRLEN). A Runner run's argv travels in it (the data on
// stdin); a longer one is refused, as permanent, before anything is sent.
// A var for the test that proves the bound real.
var maxCommandLine = 128<<10 - 1

// runner is a tmuxjob.Runner over the destination's pooled connection:
// each run is one session under the kill-safe wrapper (the same as
// link.exec's), argv single-quoted on the command line after the wrapper,
// stdin on the session's stdin.
type runner struct {
	b    *Backend
	dest string
}

// Runner is the tmuxjob.Runner for destination dest (a Host alias as
// link.exec takes it). A cancelled run's process group is killed before
// Run returns, as a timed-out link.exec's is.
func (b *Backend) Runner(dest string) tmuxjob.Runner { return runner{b, dest} }

// Run runs argv on the host from the login directory. err is the
// connection's (or ctx's): the run's end is then unknown.
func (r runner) Run(ctx context.Context, argv []string, stdin []byte) ([]byte, []byte, int, error) {
	if len(argv) == 0 {
		return nil, nil, -1, errors.New("empty argv")
	}
	until := time.Now().Add(runnerTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(until) {
		until = d
	}
	if n := len(wrapperCommand(time.Until(until), ".", argv, nil, true)); n > maxCommandLine {
		return nil, nil, -1, protocol.Wrap(protocol.Permanent, tmuxjob.ErrTooLong, fmt.Sprintf("the run's command line is %d bytes, over the %d bytes the host takes: "+
			"sshd hands it to the login shell as one argument, and Linux takes at most 128 KiB in one (MAX_ARG_STRLEN); nothing was run", n, maxCommandLine))
	}
	c, err := r.b.pool.get(ctx, r.dest)
	if err != nil {
		return nil, nil, -1, err
	}
	out, errb := outcap.New(runnerOutput), outcap.New(runnerOutput)
	run, err := r.b.start(ctx, c, runSpec{until: until, cwd: ".", argv: argv, stdin: bytes.NewReader(stdin), stdout: out, stderr: errb, mark: true})
	if err != nil {
		return nil, nil, -1, err
	}
	exit, err := r.b.outcome(ctx, run)
	if err != nil {
		return nil, nil, -1, err
	}
	if exit == nil {
		return nil, nil, -1, errors.New("the run timed out after " + time.Until(until).Round(time.Second).String())
	}
	o, cutO := out.Bytes()
	e, cutE := errb.Bytes()
	if cutO || cutE {
		return nil, nil, -1, errors.New("the run's output passed " + strconv.Itoa(runnerOutput>>20) + " MiB")
	}
	// What the login shell's rc file printed comes before the mark.
	_, o, ok := bytes.Cut(o, []byte(runMark+"\n"))
	if !ok {
		return nil, nil, -1, fmt.Errorf("the run's wrapper never ran (exit %d): %s", *exit, sshclient.FirstLine(string(e)))
	}
	return o, e, *exit, nil
}

// jobHandlers are the job.* and channel.* handlers: tmuxjob's over the
// destination's Runner. job.status and job.lookup answer unknown when the
// host cannot be reached (never a death, never a none).
func (b *Backend) jobHandlers() protocol.Methods {
	h := tmuxjob.Handlers(b.jobsFor)
	h[protocol.MethodJobStatus.Name] = b.reachable(h[protocol.MethodJobStatus.Name], func(why string) (any, error) {
		return protocol.MethodJobStatus.Answer(protocol.JobStatus{State: protocol.JobUnknown, Reason: why})
	})
	h[protocol.MethodJobLookup.Name] = b.reachable(h[protocol.MethodJobLookup.Name], func(why string) (any, error) {
		return protocol.MethodJobLookup.Answer(protocol.JobLookupResult{Unknown: why})
	})
	h.Add(protocol.MethodJobCheckSteps.Serve(b.jobCheckSteps))
	return h
}

// jobCheckSteps serves job.checkSteps: the agent phase's steps.
func (b *Backend) jobCheckSteps(ctx context.Context, call *protocol.Call, p protocol.CheckStepsParams) ([]protocol.Step, error) {
	if p.Phase != protocol.PhaseAgent {
		return []protocol.Step{}, nil
	}
	return b.agentSteps(ctx, p.Target)
}

// agentSteps are the agent phase's steps, for link.checkSteps and
// job.checkSteps alike: tmuxjob's (tmux, tools, state-root, watch), each
// failure with a remedy naming the package, and sftp. A host that cannot
// be reached fails the first step with the connection's error; the reach
// phase's steps say more.
func (b *Backend) agentSteps(ctx context.Context, t protocol.Target) ([]protocol.Step, error) {
	j, err := b.jobsFor(ctx, t)
	if err != nil {
		return []protocol.Step{{Step: "tmux", OK: protocol.StepFailed, Detail: "the host cannot be reached: " + err.Error()}}, nil
	}
	steps, err := j.CheckSteps(ctx, protocol.PhaseAgent)
	if err != nil {
		return nil, err
	}
	return append(steps, b.sftpStep(ctx, t.Host.Name)), nil
}

// reachable serves next once the call's host is connected; when it cannot
// be, answer says why instead.
func (b *Backend) reachable(next protocol.Handler, answer func(why string) (any, error)) protocol.Handler {
	return func(ctx context.Context, call *protocol.Call) (any, error) {
		if _, err := b.pool.get(ctx, call.Base.Target.Host.Name); err != nil {
			return answer(err.Error())
		}
		return next(ctx, call)
	}
}

// jobsFor is the Jobs of the host a call's target names. The connection is
// made first, so a host that cannot be reached answers with the
// connection's own error (retryable, or human with its remedy) and nothing
// is run.
func (b *Backend) jobsFor(ctx context.Context, t protocol.Target) (*tmuxjob.Jobs, error) {
	dest := t.Host.Name
	if dest == "" {
		return nil, protocol.Errorf(protocol.Permanent, "target.host.name is required")
	}
	if _, err := b.pool.get(ctx, dest); err != nil {
		return nil, err
	}
	root, err := b.jobsRoot(ctx, dest)
	if err != nil {
		return nil, err
	}
	return b.newJobs(dest, root)
}

func (b *Backend) newJobs(dest, root string) (*tmuxjob.Jobs, error) {
	return tmuxjob.New(b.Runner(dest), tmuxjob.Options{
		Root: root, Kind: JobKind, Channel: b.cfg.Channel, Watches: b.watches.Of(dest + "\x00" + root),
		RootRemedy: "Give the SSH user a writable home, or register the plugin with --jobs-root DIR naming a directory it can write (absolute, or under its login directory)",
		View: func(handle, _ string) protocol.View {
			return tmuxjob.ViewArgv(nil, b.viewArgv(dest, root, handle)...)
		},
	})
}

// viewArgv is the view's command line: this executable's view sub-command
// with the registration's resolution and trust flags, so it reaches the
// host exactly as the plugin does.
func (b *Backend) viewArgv(dest, root, handle string) []string {
	argv := []string{b.cfg.ShimExe, ViewCommand}
	for _, f := range [][2]string{{"config", b.cfg.SSHConfig}, {"known-hosts", b.cfg.KnownHosts}, {"identity", b.cfg.Identity}} {
		if f[1] != "" {
			argv = append(argv, "--"+f[0], f[1])
		}
	}
	for _, o := range b.cfg.Options {
		argv = append(argv, "--option", o)
	}
	return append(argv, "--host", dest, "--root", root, handle)
}

// jobsRoot is dest's jobs directory (--jobs-root, under the login
// directory unless absolute), asked once per host per invocation.
func (b *Backend) jobsRoot(ctx context.Context, dest string) (string, error) {
	return b.roots.Get(ctx, dest, b.Runner(dest), b.cfg.JobsRoot, "host "+sshclient.SafeName(dest))
}
