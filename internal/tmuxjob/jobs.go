package tmuxjob

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// Options configure Jobs.
type Options struct {
	// Root is the state root on the host (absolute): jobs live under
	// Root/jobs/<id>. For example /var/lib/mu-jobs or $HOME/.mu-jobs.
	Root string
	// Socket is the fixed tmux socket on the host; default Root/tmux.sock.
	Socket string
	// Kind is the job seam's kind; Channel the channel seam's name.
	Kind    string
	Channel string
	// View builds the view mu runs locally for a job, from its handle and
	// its log's path on the host. Default: LocalView (the host is this
	// machine). The docker backend returns `<plugin> view …`, whose
	// sub-command calls Follow.
	View func(handle, logPath string) protocol.View
	// Nudge is the fixed token typed into the agent's terminal (then Enter)
	// after a delivery: never the delivery's text. Default "mu:inbox".
	Nudge string
	// InterruptKeys are the tmux keys that interrupt a turn. Default C-c.
	InterruptKeys []string
	// MaxSettleText bounds an observation's lastText once JSON-encoded.
	// Default 256 KiB.
	MaxSettleText int
	// Poll is the interval of watch's and interrupt's polling. Default
	// 100 ms.
	Poll time.Duration
	// CommandWindow: a channel.command identical to the newest delivery
	// within this window is its resend (a command carries no msgId).
	// Default 60 s.
	CommandWindow time.Duration
	// Now is the clock (epoch ms of deliveries). Default time.Now.
	Now func() time.Time
	// Watches multiplexes the host's watches onto one run (an SSH host's
	// sessions are few): one per host, shared by every Jobs of the host.
	// Default: one of this Jobs' own.
	Watches *Watches
	// RootRemedy is what job.checkSteps' state-root step tells a person to
	// do when Root is not writable (the backend knows how Root is chosen).
	RootRemedy string
	// OwnsHome: the plugin created this host (a container, a pod) and owns
	// its user's home: the claude adapter pre-answers Claude Code's
	// first-run screens there (docs/harness.md "What the plugin writes in a
	// home"). False (a user's own machine): it never writes there.
	OwnsHome bool
}

// Jobs runs detached agent jobs under tmux on one host, through a Runner,
// and serves their channel. It keeps no state in the plugin: everything is
// on the host, so any invocation reads what another wrote.
type Jobs struct {
	r    Runner
	opts Options
}

// New checks opts and returns a Jobs for the host r reaches.
func New(r Runner, opts Options) (*Jobs, error) {
	if r == nil {
		return nil, errors.New("tmuxjob: a Runner is required")
	}
	if !path.IsAbs(opts.Root) || path.Clean(opts.Root) != opts.Root || opts.Root == "/" {
		return nil, fmt.Errorf("tmuxjob: Root %q must be a clean absolute path", opts.Root)
	}
	if opts.Socket == "" {
		opts.Socket = opts.Root + "/tmux.sock"
	}
	if !path.IsAbs(opts.Socket) {
		return nil, fmt.Errorf("tmuxjob: Socket %q must be absolute", opts.Socket)
	}
	if opts.Kind == "" || opts.Channel == "" {
		return nil, errors.New("tmuxjob: Kind and Channel are required")
	}
	for _, s := range []string{opts.Root, opts.Socket} {
		if !noNUL(s) || strings.ContainsAny(s, "\n") {
			return nil, fmt.Errorf("tmuxjob: %q holds a newline or NUL", s)
		}
	}
	if opts.View == nil {
		opts.View = LocalView
	}
	if opts.Nudge == "" {
		opts.Nudge = DefaultNudge
	}
	if len(opts.InterruptKeys) == 0 {
		opts.InterruptKeys = []string{"C-c"}
	}
	if opts.MaxSettleText <= 0 {
		opts.MaxSettleText = 256 << 10
	}
	if opts.Poll <= 0 {
		opts.Poll = 100 * time.Millisecond
	}
	if opts.CommandWindow <= 0 {
		opts.CommandWindow = 60 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Watches == nil {
		opts.Watches = NewWatches()
	}
	return &Jobs{r: r, opts: opts}, nil
}

// DefaultNudge is the token typed after a delivery.
const DefaultNudge = "mu:inbox"

// JobDir is the job's directory on the host.
func (j *Jobs) JobDir(key string) string { return j.opts.Root + "/jobs/" + jobID(key) }

// LogPath is the file that follows the job's terminal output on the host.
func (j *Jobs) LogPath(key string) string { return j.JobDir(key) + "/log" }

// ChannelDir is the harness's channel directory ($MU_CHANNEL_DIR).
func (j *Jobs) ChannelDir(key string) string { return j.JobDir(key) + "/chan" }

func (j *Jobs) pipeCmd(key string) string { return "exec cat >> " + shQuote(j.LogPath(key)) }

func (j *Jobs) view(key string) protocol.View {
	v := j.opts.View(handleFor(jobID(key)), j.LogPath(key))
	if v.Env == nil {
		v.Env = map[string]string{}
	}
	return v
}

// Start is job.start: it claims the key on the host and runs spec.cmd in a
// tmux session of its own. A second start with the same key returns the
// same handle and starts nothing; a key fenced by a lookup refuses.
func (j *Jobs) Start(ctx context.Context, p protocol.JobStartParams) (protocol.JobStartResult, error) {
	if p.Key == "" {
		return protocol.JobStartResult{}, protocol.Errorf(protocol.Permanent, "job.start: key is required")
	}
	if p.Spec.FirstPrompt != nil {
		return protocol.JobStartResult{}, protocol.Errorf(protocol.Permanent, "job.start: this kind's first turn is on-send: a firstPrompt is refused")
	}
	if len(p.Spec.Sockets) > 0 {
		return protocol.JobStartResult{}, protocol.Errorf(protocol.Permanent, "job.start: this kind does not honour sockets")
	}
	harness := harnessOf(p.Spec)
	if err := checkRole(harness, p.Spec.Role); err != nil {
		return protocol.JobStartResult{}, err
	}
	if strings.TrimSpace(p.Spec.Cmd) == "" {
		return protocol.JobStartResult{}, protocol.Errorf(protocol.Permanent, "job.start: spec.cmd is empty")
	}
	env, err := envFile(p.Spec.Env)
	if err != nil {
		return protocol.JobStartResult{}, protocol.Errorf(protocol.Permanent, "job.start: %v", err)
	}
	for _, s := range []string{p.Key, p.Spec.Cwd, p.Spec.Cmd, p.Spec.Workstream, p.Spec.Name} {
		if !noNUL(s) {
			return protocol.JobStartResult{}, protocol.Errorf(protocol.Permanent, "job.start: a NUL byte in the key or spec")
		}
	}
	id := jobID(p.Key)
	agent := p.Spec.Workstream + "/" + p.Spec.Name
	if err := startFits(p, agent, harness); err != nil {
		return protocol.JobStartResult{}, err
	}
	o, err := j.run(ctx, "start", id, []byte(env), p.Key, agent, p.Spec.Cwd, p.Spec.Cmd, wrapper, j.pipeCmd(p.Key),
		adapterScript(harness, j.opts.OwnsHome), p.Spec.Role, readIn(env))
	if pe := refusedRun(err); pe != nil {
		return protocol.JobStartResult{}, tooLongFor("job.start", pe, field{"spec.cmd", p.Spec.Cmd}, field{"spec.cwd", p.Spec.Cwd},
			field{"the key", p.Key}, field{"spec.workstream and spec.name", agent})
	}
	if err != nil {
		return protocol.JobStartResult{}, outcomeOf(err, "job.start")
	}
	switch {
	case o.has("refused"):
		why := "its key was fenced by a lookup"
		if o.get("refused") == "stopped" {
			why = "its key was stopped"
		}
		return protocol.JobStartResult{}, protocol.Errorf(protocol.Permanent, "job.start: refused: %s", why)
	case o.has("busy"):
		return protocol.JobStartResult{}, protocol.Errorf(protocol.UnknownOutcome, "job.start: %s", o.get("busy"))
	case !o.has("ok"):
		return protocol.JobStartResult{}, protocol.Errorf(protocol.UnknownOutcome, "job.start: no answer from the host")
	}
	return protocol.JobStartResult{View: j.view(p.Key), Handle: handleFor(id)}, nil
}

// Lookup is job.lookup. A fenced lookup that answers none makes the key
// final: no later start under it takes effect.
func (j *Jobs) Lookup(ctx context.Context, p protocol.LookupParams) (protocol.JobLookupResult, error) {
	if p.Key == "" {
		return protocol.JobLookupResult{}, protocol.Errorf(protocol.Permanent, "job.lookup: key is required")
	}
	fence := "0"
	if p.Fence {
		fence = "1"
	}
	o, err := j.run(ctx, "lookup", jobID(p.Key), nil, fence, j.pipeCmd(p.Key))
	if err != nil {
		return protocol.JobLookupResult{Unknown: err.Error()}, nil
	}
	switch {
	case o.has("found"):
		v := j.view(p.Key)
		return protocol.JobLookupResult{Found: &protocol.JobFound{Handle: handleFor(jobID(p.Key)), View: &v}}, nil
	case o.has("none"):
		return protocol.JobLookupResult{None: true}, nil
	case o.has("busy"):
		return protocol.JobLookupResult{Pending: true}, nil
	}
	return protocol.JobLookupResult{Unknown: "the host gave no answer"}, nil
}

// StoppedExit is the exit job.status reports for a job job.stop killed
// (SIGKILL's shell status): the wrapper could record none.
const StoppedExit = 137

// Status is job.status for the job key names.
func (j *Jobs) Status(ctx context.Context, key string) (protocol.JobStatus, error) {
	if key == "" {
		return protocol.JobStatus{}, protocol.Errorf(protocol.Permanent, "job.status: target.job.key is required")
	}
	o, err := j.run(ctx, "status", jobID(key), nil)
	if err != nil {
		return protocol.JobStatus{State: protocol.JobUnknown, Reason: err.Error()}, nil
	}
	switch {
	case o.has("running"):
		return protocol.JobStatus{State: protocol.JobRunning}, nil
	case o.has("ended"):
		n, err := strconv.Atoi(strings.TrimSpace(o.get("ended")))
		if err != nil {
			return protocol.JobStatus{State: protocol.JobUnknown, Reason: "the job's exit record is unreadable"}, nil
		}
		return protocol.JobStatus{State: protocol.JobEnded, Exit: &n}, nil
	case o.has("stopped"):
		n := StoppedExit
		return protocol.JobStatus{State: protocol.JobEnded, Exit: &n}, nil
	case o.has("lost"):
		return protocol.JobStatus{State: protocol.JobLost, Reason: o.get("lost")}, nil
	case o.has("unknown"):
		return protocol.JobStatus{State: protocol.JobUnknown, Reason: o.get("unknown")}, nil
	}
	return protocol.JobStatus{State: protocol.JobUnknown, Reason: "the host gave no answer"}, nil
}

// Stop is job.stop: it fences the key, kills the job's process group and
// every process carrying its mark, and answers only once none is left.
// Stopping a stopped (or never started) job succeeds.
func (j *Jobs) Stop(ctx context.Context, key string) error {
	if key == "" {
		return protocol.Errorf(protocol.Permanent, "job.stop: key is required")
	}
	o, err := j.run(ctx, "stop", jobID(key), nil)
	if err != nil {
		return protocol.Wrap(protocol.UnknownOutcome, err, "job.stop")
	}
	switch {
	case o.has("gone"):
		return nil
	case o.has("alive"):
		return protocol.Errorf(protocol.UnknownOutcome, "job.stop: processes of the job still run: %s", o.get("alive"))
	case o.has("busy"):
		return protocol.Errorf(protocol.UnknownOutcome, "job.stop: %s", o.get("busy"))
	}
	return protocol.Errorf(protocol.UnknownOutcome, "job.stop: no answer from the host")
}

// Attach is job.attach: a new view on the job.
func (j *Jobs) Attach(ctx context.Context, key string) (protocol.View, error) {
	if key == "" {
		return protocol.View{}, protocol.Errorf(protocol.Permanent, "job.attach: target.job.key is required")
	}
	o, err := j.run(ctx, "lookup", jobID(key), nil, "0", j.pipeCmd(key))
	if err != nil {
		return protocol.View{}, protocol.Wrap(protocol.Retryable, err, "job.attach")
	}
	if !o.has("found") {
		return protocol.View{}, protocol.Errorf(protocol.Permanent, "job.attach: no job under this key on the host")
	}
	return j.view(key), nil
}
