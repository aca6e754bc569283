// Package fake is mu-plugin-fake: the reference implementation of all four
// seams of the plugin protocol, and the test double mu's own tests and the
// contract suite drive. Its link runs for real on local directories; its
// hosts, jobs and channel are a simulated world on a clock; a scenario file
// injects every fault the spec names (docs/fake.md).
package fake

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/mu-org/mu-plugins/internal/proc"
	"github.com/mu-org/mu-plugins/protocol"
)

// Name is the plugin's registered name; ChannelName its channel seam's.
const (
	Name           = "fake"
	ChannelName    = "fake"
	Kind           = "fake"
	MaxScriptBytes = 64 << 10
	DedupeWindowMs = 10 * 60 * 1000
	InFlightMs     = 30 * 1000
)

// Config is what the flags give (Flags).
type Config struct {
	Instance  string    // the handshake's instance (default "fake")
	Root      string    // host directories and transcripts live under it; "" = a temp dir removed at exit
	StateDir  string    // "" = the world lives in memory for one invocation
	TurnMs    int64     // how long a turn takes to settle
	EffectMs  int64     // how long host.acquire and job.start take between pending and landed
	FirstTurn string    // protocol.FirstTurnOnSend or FirstTurnAtStart
	Scenario  *Scenario // faults to inject (nil: none)
	// ScenarioFile is --scenario: Config.Open loads it into Scenario.
	ScenarioFile string
	Exe          string         // this binary, for the view command
	Out          io.WriteCloser // stdout: Serve writes it, and so do the wire faults (nil: os.Stdout)
	Now          func() time.Time
	Log          *slog.Logger
}

// Flags registers the plugin's flags on fs, bound to c.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.ScenarioFile, "scenario", "", "a JSON file of faults to inject (docs/fake.md)")
	fs.StringVar(&c.Instance, "instance", "fake", "the instance named in the handshake")
	fs.StringVar(&c.StateDir, "state", "", "keep the world in this directory between invocations (default: in memory)")
	fs.StringVar(&c.Root, "root", "", "where hosts' login directories live (default: DIR/root with --state, else a temp dir)")
	fs.Int64Var(&c.TurnMs, "turn-ms", 200, "how long a simulated turn takes to settle")
	fs.Int64Var(&c.EffectMs, "effect-ms", 0, "how long host.acquire and job.start take to land")
	fs.StringVar(&c.FirstTurn, "first-turn", "on-send", "the job kind's firstTurn: on-send or at-start")
}

// Open reads the scenario file, builds the plugin, fires the scenario's
// start-up faults (on stdout, before the handshake) and returns its Serve
// options. c.Scenario is set only once the plugin is built, so a plugin
// that refused to start never lingers (Scenario.Linger).
func (c *Config) Open(_ context.Context, log *slog.Logger) (protocol.Options, error) {
	cfg := *c
	cfg.Log = log
	if c.ScenarioFile != "" {
		s, err := LoadScenario(c.ScenarioFile)
		if err != nil {
			return protocol.Options{}, err
		}
		cfg.Scenario = s
	}
	f, err := New(cfg)
	if err != nil {
		return protocol.Options{}, err
	}
	c.Scenario = cfg.Scenario
	f.StartupFaults()
	return f.Options(), nil
}

// Fake is one invocation's plugin.
type Fake struct {
	cfg     Config
	store   Store
	root    string
	tmpRoot bool
	faults  *faults
	watches atomic.Int64
}

// New builds the plugin from cfg.
func New(cfg Config) (*Fake, error) {
	if cfg.Instance == "" {
		cfg.Instance = "fake"
	}
	if cfg.FirstTurn == "" {
		cfg.FirstTurn = protocol.FirstTurnOnSend
	}
	if cfg.FirstTurn != protocol.FirstTurnOnSend && cfg.FirstTurn != protocol.FirstTurnAtStart {
		return nil, fmt.Errorf("--first-turn must be on-send or at-start, not %q", cfg.FirstTurn)
	}
	if cfg.TurnMs < 0 || cfg.EffectMs < 0 {
		return nil, errors.New("--turn-ms and --effect-ms must not be negative")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Exe == "" {
		cfg.Exe, _ = os.Executable()
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	f := &Fake{cfg: cfg, faults: newFaults(cfg.Scenario, cfg.Out)}
	if cfg.StateDir != "" {
		st, err := newFileStore(cfg.StateDir)
		if err != nil {
			return nil, err
		}
		f.store = st
		if cfg.Root == "" {
			cfg.Root = filepath.Join(cfg.StateDir, "root")
		}
	} else {
		f.store = newMemStore()
	}
	f.root = cfg.Root
	if f.root == "" {
		d, err := tempRoot()
		if err != nil {
			return nil, err
		}
		f.root, f.tmpRoot = d, true
		f.faults.exit = func(code int) { // a crash fault leaves no temp root either
			_ = os.RemoveAll(d)
			os.Exit(code)
		}
	}
	abs, err := filepath.Abs(f.root)
	if err != nil {
		return nil, err
	}
	f.root = abs
	if err := os.MkdirAll(filepath.Join(f.root, "transcripts"), 0o700); err != nil {
		return nil, err
	}
	f.cfg = cfg
	return f, nil
}

// Root is the directory the hosts' login directories live under.
func (f *Fake) Root() string { return f.root }

// Seams is the fake's declaration: every seam, every capability on.
func (f *Fake) Seams() protocol.Seams {
	keyCaps := protocol.KeyCaps{
		Lookup: true, FenceKey: true,
		Dedupe:     &protocol.Dedupe{Exact: true, WindowMs: DedupeWindowMs},
		InFlightMs: protocol.Int64(InFlightMs),
	}
	return protocol.Seams{
		Link: &protocol.LinkSeam{
			Fetch: true, Push: protocol.Bool(true), Slots: protocol.SlotsSelf,
			RemoteOnTimeout: protocol.RemoteStopped, Quiescence: protocol.QuiescenceProvable,
			MaxScriptBytes: MaxScriptBytes, Checks: []string{protocol.PhaseReach},
		},
		Job: &protocol.JobSeam{
			Kind: Kind, View: protocol.ViewDetached, Handle: protocol.HandleReply,
			Start: keyCaps, Channel: ChannelName, Checks: []string{protocol.PhaseAgent},
			FirstTurn: f.cfg.FirstTurn, OutlivesHost: protocol.Bool(false),
			Honours: &protocol.Honours{Command: true, Env: true, Sockets: true, Roles: []string{"full-access", "read-only"}},
		},
		Host: &protocol.HostSeam{Acquire: keyCaps},
		Channel: &protocol.ChannelSeam{Name: ChannelName, Caps: protocol.ChannelCaps{
			Fence: "none", Receipt: "exact", Dedupe: "exact", Steer: "native", Interrupt: "native",
			Fresh: "in-place", Answer: true, Command: true, Watch: "stream", SettleText: "full",
		}},
	}
}

// Options are the Serve options: declaration, handlers (each behind the
// scenario's faults) and the Stop hook.
func (f *Fake) Options() protocol.Options {
	hs := protocol.NewMethods(
		protocol.MethodHostAcquire.Serve(f.hostAcquire),
		protocol.MethodHostLookup.Serve(f.hostLookup),
		protocol.MethodHostStatus.Serve(f.hostStatus),
		protocol.MethodHostRelease.Serve(f.hostRelease),

		protocol.MethodLinkExec.Serve(f.linkExec),
		protocol.MethodLinkFetch.Serve(f.linkFetch),
		protocol.MethodLinkPush.Serve(f.linkPush),
		protocol.MethodLinkCheckSteps.Serve(f.linkCheckSteps),

		protocol.MethodJobStart.Serve(f.jobStart),
		protocol.MethodJobLookup.Serve(f.jobLookup),
		protocol.MethodJobStatus.Serve(f.jobStatus),
		protocol.MethodJobStop.Serve(f.jobStop),
		protocol.MethodJobAttach.Serve(f.jobAttach),
		protocol.MethodJobCheckSteps.Serve(f.jobCheckSteps),

		protocol.MethodChannelReadStates.Serve(f.readStates),
		protocol.MethodChannelBaseline.Serve(f.baseline),
		protocol.MethodChannelReceipt.Serve(f.receipt),
		protocol.MethodChannelLastRun.Serve(f.lastRun),
		protocol.MethodChannelWatch.Serve(f.watch),
		protocol.MethodChannelSend.Serve(f.send),
		protocol.MethodChannelFresh.Serve(f.fresh),
		protocol.MethodChannelCommand.Serve(f.command),
		protocol.MethodChannelInterrupt.Serve(f.interrupt),
		protocol.MethodChannelAbort.Serve(f.abort),
		protocol.MethodChannelAnswer.Serve(f.answer),
	)
	for m, h := range hs {
		hs[m] = f.faults.wrap(m, h)
	}
	return protocol.Options{
		Instance: f.cfg.Instance,
		Seams:    f.Seams(),
		Handlers: hs,
		Stop:     f.stop,
		Out:      f.faults.wire,
	}
}

// stop ends whatever a call still runs, and removes a temp root.
func (f *Fake) stop(ctx context.Context) {
	proc.KillAll()
	if f.tmpRoot {
		_ = os.RemoveAll(f.root)
	}
}

// now is the clock in epoch ms.
func (f *Fake) now() int64 { return f.cfg.Now().UnixMilli() }
