package caller

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// Plugin is one running plugin process, for one invocation. Its methods are
// safe for concurrent use.
type Plugin struct {
	cfg  Config
	pgid int        // 0 for a Config.Local plugin: it has no group
	raw  *lineQueue // a Raw's: every inbound line, unjudged

	stdin  *os.File // our end of the plugin's stdin
	stdout *os.File // our end of the plugin's stdout

	// wsem is the write lock: a channel, so a waiting call can give up when
	// its context ends. The holder may write to stdin.
	wsem        chan struct{}
	stdinClosed bool // guarded by wsem

	tmu sync.Mutex // serializes Transcript calls

	mu        sync.Mutex
	nextID    int64
	st        *wireState
	stopping  bool
	stopCause error
	broken    *Violation
	errLine   []byte // stderr's first line so far
	errDone   bool   // errLine is complete

	decl    protocol.InitializeResult
	declRaw json.RawMessage

	stopOnce    sync.Once
	stopStarted chan struct{} // closed when the stop sequence begins
	stopped     chan struct{} // closed when it has finished
	report      StopReport

	exited   chan struct{} // closed once the leader was reaped
	exitErr  error
	leftover int // processes left in the group at the leader's exit, killed

	readerDone chan struct{}
	stderrDone chan struct{}
}

// StopReport tells how the stop sequence went.
type StopReport struct {
	// Cause is what began the stop: ErrStopped (Stop), ErrDeadline or a
	// context error (a call), a *Violation, ErrExited, ErrStdoutClosed…
	Cause error
	// Graceful: the group emptied by itself, within the grace after stdin
	// was closed (or, when the leader exited first, it left nothing behind).
	Graceful bool
	// Killed is how many live processes of the group were SIGKILLed, by the
	// stop or at the leader's exit.
	Killed int
	// LeftAfterLeader is how many of them were still in the group when the
	// leader exited (killed at once).
	LeftAfterLeader int
	// Exit is the leader's exit status as os/exec reports it.
	Exit error
	// Waited is the time from closing stdin to the group being empty.
	Waited time.Duration
	// GroupEmpty: no live process was left in the group at the end.
	GroupEmpty bool
}

// LeaderKilled reports whether the stop had to kill the plugin itself: it
// had not exited within the grace (what it left in its group aside).
func (r StopReport) LeaderKilled() bool { return r.Killed > r.LeftAfterLeader }

// Start registers-checks and starts the plugin, and runs the handshake with
// every load rule. ctx bounds the handshake only; the plugin then lives
// until Stop (or a stop that a deadline, a cancel, a violation or its exit
// begins). A refusal is a *LoadRefusal; the plugin is then already stopped.
func Start(ctx context.Context, cfg Config) (*Plugin, error) {
	p, err := launch(ctx, cfg, false)
	if err != nil {
		return nil, err
	}
	if err := p.handshake(ctx); err != nil {
		p.beginStop(err)
		<-p.stopped
		return nil, err
	}
	return p, nil
}

// launch runs the registration checks and starts the plugin: argv in its
// own process group, or Config.Local in this process. raw hands its lines
// to a Raw instead of the inbound checks.
func launch(ctx context.Context, cfg Config, raw bool) (*Plugin, error) {
	c := cfg.withDefaults()
	if c.Local == nil {
		if len(c.Argv) == 0 {
			return nil, &LoadRefusal{Name: c.Name, Rule: RuleRegPath, Rules: []string{RuleRegPath}, Detail: "empty argv"}
		}
		if err := CheckRegistration(c.Name, c.Argv[0]); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("plugin %q not started: %w", c.Name, err)
	}
	p, err := spawn(c, raw)
	if err != nil {
		return nil, &LoadRefusal{Name: c.Name, Rule: RuleRegStart, Rules: []string{RuleRegStart}, Detail: err.Error(), Err: err}
	}
	return p, nil
}

func spawn(c Config, raw bool) (*Plugin, error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	if c.Local != nil {
		return startLocal(c, raw, inR, inW, outR, outW), nil
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	base := c.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	cmd := &exec.Cmd{
		Path:        c.Argv[0],
		Args:        c.Argv,
		Env:         PluginEnv(base, c.Env),
		Dir:         c.Dir,
		Stdin:       inR,
		Stdout:      outW,
		Stderr:      errW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	// The child holds its ends now.
	inR.Close()
	outW.Close()
	errW.Close()
	p := newPlugin(c, raw, inW, outR)
	p.pgid = cmd.Process.Pid // Setpgid with Pgid 0: its own group
	go p.waitLeader(cmd.Wait)
	go p.readLoop()
	go p.drainStderr(errR)
	return p, nil
}

// newPlugin is a Plugin on our ends of its stdin and stdout, its leader
// and stderr not yet watched.
func newPlugin(c Config, raw bool, stdin, stdout *os.File) *Plugin {
	p := &Plugin{
		cfg:         c,
		stdin:       stdin,
		stdout:      stdout,
		wsem:        make(chan struct{}, 1),
		st:          newWireState(),
		stopStarted: make(chan struct{}),
		stopped:     make(chan struct{}),
		exited:      make(chan struct{}),
		readerDone:  make(chan struct{}),
		stderrDone:  make(chan struct{}),
	}
	if raw {
		p.raw = newLineQueue()
	}
	return p
}

// waitLeader reaps the leader (wait returns at its exit). The spec tracks
// the group, not the leader: what is left of the group when the leader
// exits is killed at once.
func (p *Plugin) waitLeader(wait func() error) {
	p.exitErr = wait()
	if p.pgid > 0 && len(groupMembers(p.pgid)) > 0 {
		p.leftover = killGroup(p.pgid)
	}
	close(p.exited)
	p.beginStop(ErrExited)
}

// readLoop reads the plugin's stdout to its end: every line goes through
// the inbound checks. It keeps draining after a violation, so the plugin
// never blocks on a full pipe and the transcript stays whole.
func (p *Plugin) readLoop() {
	defer close(p.readerDone)
	br := bufio.NewReaderSize(p.stdout, 64<<10)
	for {
		line, err := protocol.ReadLine(br, protocol.MaxLine)
		oversize := errors.Is(err, protocol.ErrLineTooLong)
		switch {
		case oversize || err == nil && p.raw != nil:
			p.event(Event{Dir: In, Line: line, Oversize: oversize})
			if p.raw != nil {
				p.raw.push(line, oversize)
			} else {
				p.violate(&Violation{Rule: VLineTooLong, Detail: "a line exceeds 1 MiB"})
			}
		case err != nil:
			if p.raw != nil {
				p.raw.end()
			}
			p.beginStop(ErrStdoutClosed)
			return
		default:
			p.handle(line)
		}
	}
}

func (p *Plugin) violate(v *Violation) {
	p.mu.Lock()
	first := p.broken == nil
	if first {
		p.broken = v
	}
	p.mu.Unlock()
	if first {
		p.beginStop(v)
	}
}

// handle judges one inbound line and acts on it.
func (p *Plugin) handle(line []byte) {
	p.event(Event{Dir: In, Line: line})
	p.mu.Lock()
	if p.broken != nil {
		p.mu.Unlock()
		return
	}
	in, v := p.st.check(line)
	if v != nil {
		p.broken = v
		if c := in.call; c != nil {
			c.resolve(outcome{err: &InvalidReplyError{Method: c.method, ID: c.id, Violation: v}})
		}
		p.mu.Unlock()
		p.beginStop(v)
		return
	}
	switch {
	case in.call != nil:
		in.call.resolve(in.out) // a no-op for a call already given up
	case in.watch != nil:
		in.watch.end(&in.note)
	}
	p.mu.Unlock()
}

// drainStderr copies stderr to Config.Stderr and keeps its first line.
func (p *Plugin) drainStderr(r *os.File) {
	defer close(p.stderrDone)
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if w := p.cfg.Stderr; w != nil {
				_, _ = w.Write(buf[:n])
			}
			p.keepFirstLine(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// maxErrLine is the most bytes kept for the first stderr line: enough for
// 400 characters of any width.
const maxErrLine = 400 * 4

func (p *Plugin) keepFirstLine(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.errDone {
		return
	}
	for _, c := range b {
		if c == '\n' || len(p.errLine) >= maxErrLine {
			p.errDone = true
			return
		}
		p.errLine = append(p.errLine, c)
	}
}

// FirstStderrLine is the first line the plugin wrote to stderr (so far),
// cut to 400 characters, for an error message. Nothing else of stderr is
// kept.
func (p *Plugin) FirstStderrLine() string {
	p.mu.Lock()
	s := toValidUTF8(p.errLine)
	p.mu.Unlock()
	r := []rune(s)
	if len(r) > 400 {
		r = r[:400]
	}
	return string(r)
}

// event reports one message to the transcript hook.
func (p *Plugin) event(e Event) {
	if p.cfg.Transcript == nil {
		return
	}
	e.Time = time.Now()
	p.tmu.Lock()
	defer p.tmu.Unlock()
	p.cfg.Transcript(e)
}

// Declaration is the plugin's checked declaration (its initialize result).
func (p *Plugin) Declaration() protocol.InitializeResult { return p.decl }

// DeclarationRaw is the initialize result exactly as the plugin sent it:
// what mu plugin add records.
func (p *Plugin) DeclarationRaw() json.RawMessage { return p.declRaw }

// Pgid is the plugin's process group id (0 for a Config.Local plugin).
func (p *Plugin) Pgid() int { return p.pgid }

// Broken returns the *Violation that broke the plugin, or nil.
func (p *Plugin) Broken() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broken == nil {
		return nil
	}
	return p.broken
}

// Violation returns the violation that broke the plugin, or nil.
func (p *Plugin) Violation() *Violation {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.broken
}

// Stopping is closed once the stop sequence has begun: from then on no
// request is sent.
func (p *Plugin) Stopping() <-chan struct{} { return p.stopStarted }

// Done is closed once the stop sequence has finished and the group is gone.
func (p *Plugin) Done() <-chan struct{} { return p.stopped }

// Stop runs the stop sequence (if nothing began it yet) and waits for it to
// finish. It is safe to call more than once and concurrently; every call
// returns the same report.
func (p *Plugin) Stop() StopReport {
	p.beginStop(ErrStopped)
	<-p.stopped
	return p.report
}

// ErrHangup is the cause CloseStdin gives its stop.
var ErrHangup = errors.New("stdin closed without shutdown")

// CloseStdin stops the plugin as a mu that died would: it only closes
// stdin (no $/cancel, no shutdown), waits at most the grace for the group
// to empty, and kills the group. The report's Graceful tells whether the
// plugin honoured "on stdin EOF, exit within 5 s". Pending calls fail
// unanswered. If a stop already began, it waits for that one instead.
func (p *Plugin) CloseStdin() StopReport {
	p.beginStopMode(ErrHangup, true)
	<-p.stopped
	return p.report
}

// Report returns the stop report once Done is closed (zero before).
func (p *Plugin) Report() StopReport {
	select {
	case <-p.stopped:
		return p.report
	default:
		return StopReport{}
	}
}
