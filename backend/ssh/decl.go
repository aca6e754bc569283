// Package ssh is mu-plugin-ssh's backend: a link to any SSH host, with
// scripts that stop on timeout ("stopping"), git fetch and push over the
// plugin's own connection, and OpenSSH's own resolution and trust rules
// (internal/sshclient).
package ssh

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mu-org/mu-plugins/internal/proc"
	"github.com/mu-org/mu-plugins/internal/sshclient"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// MaxScriptBytes is the declared maxScriptBytes: the script travels on
// stdin, so only the 1 MiB message bounds it.
const MaxScriptBytes = protocol.MaxLine - 16384

// DefaultMaxSessions is OpenSSH's MaxSessions default.
const DefaultMaxSessions = 10

// Config is the plugin's registration flags.
type Config struct {
	SSHConfig   string   // --config: the ssh_config file ("" is OpenSSH's own)
	KnownHosts  string   // --known-hosts: replaces the configured known_hosts files
	Identity    string   // --identity: a private key tried before the configured ones
	Instance    string   // --instance; "" derives it (see DefaultInstance)
	MaxSessions int      // --max-sessions: the server's MaxSessions (default 10); scripts get two fewer
	Options     []string // --option Key=Value (repeatable): ssh's -o, for the destination
	ShimExe     string   // the binary git runs as GIT_SSH ("" is this executable)
	JobsRoot    string   // --jobs-root: where a host keeps its jobs ("" is JobsDir under the login directory)
	Channel     string   // the channel seam's name: the registered name ("" is ChannelName)
}

// Client is the configuration of the SSH client the plugin connects with.
func (c Config) Client() sshclient.Config {
	return sshclient.Config{SSHConfig: c.SSHConfig, Options: c.Options, KnownHosts: c.KnownHosts, Identity: c.Identity}
}

// Check refuses flags the plugin cannot work with: files that cannot be
// read, options ssh does not know, fewer than two sessions.
func (c Config) Check() error {
	if err := c.Client().Check(); err != nil {
		return err
	}
	if c.MaxSessions != 0 && c.MaxSessions < 2 {
		return fmt.Errorf("--max-sessions must be at least 2 (one session is kept for stopping scripts), got %d", c.MaxSessions)
	}
	if n := len(c.Instance); n > 128 {
		return fmt.Errorf("--instance must be 1-128 characters, got %d", n)
	}
	return nil
}

// Flags registers the plugin's flags on fs, bound to c.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.SSHConfig, "config", "", "the ssh_config `FILE` to resolve hosts with, as `ssh -F FILE` (default: OpenSSH's ~/.ssh/config and /etc/ssh/ssh_config)")
	fs.Var((*optionFlag)(&c.Options), "option", "an ssh_config `Key=Value` for the destination, as `ssh -o Key=Value`; repeatable")
	fs.StringVar(&c.KnownHosts, "known-hosts", "", "the known_hosts `FILE` to verify host keys with, replacing UserKnownHostsFile and GlobalKnownHostsFile")
	fs.StringVar(&c.Identity, "identity", "", "a private key `FILE` offered before the configured IdentityFile ones, as `ssh -i FILE`")
	fs.StringVar(&c.Instance, "instance", "", "the handshake's instance `NAME` (default \"ssh:\" and the absolute path of the ssh_config in use)")
	fs.StringVar(&c.JobsRoot, "jobs-root", JobsDir, "where each host keeps its agent jobs (tmux socket, one directory per job): a `DIR` under the login directory, or absolute")
	fs.IntVar(&c.MaxSessions, "max-sessions", DefaultMaxSessions, "the servers' MaxSessions `N`: scripts run at most N-2 at once per connection (one session is kept for stops, one for sessions the server is still closing)")
}

// optionFlag collects the repeatable --option.
type optionFlag []string

func (o *optionFlag) String() string     { return strings.Join(*o, " ") }
func (o *optionFlag) Set(v string) error { *o = append(*o, v); return nil }

// Open checks the flags (Check) and builds the backend: its Serve options.
func (c *Config) Open(_ context.Context, log *slog.Logger) (protocol.Options, error) {
	if err := c.Check(); err != nil {
		return protocol.Options{}, err
	}
	return New(*c, log).Options(), nil
}

// Backend serves the link seam.
type Backend struct {
	cfg  Config
	log  *slog.Logger
	pool *pool
	shim *shim

	mu    sync.Mutex
	runs  map[*run]struct{}
	roots tmuxjob.Roots // destination → its jobs root
	// watches: each host's watches, on one run (destination and root).
	watches tmuxjob.HostWatches
}

// New builds the backend.
func New(cfg Config, log *slog.Logger) *Backend {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.ShimExe == "" {
		if exe, err := os.Executable(); err == nil {
			cfg.ShimExe = exe
		}
	}
	if cfg.JobsRoot == "" {
		cfg.JobsRoot = JobsDir
	}
	if cfg.Channel == "" {
		cfg.Channel = ChannelName
	}
	b := &Backend{cfg: cfg, log: log, runs: map[*run]struct{}{}}
	b.pool = newPool(sshclient.NewDialer(cfg.Client(), log), cfg.MaxSessions, log)
	return b
}

// DefaultInstance derives the instance from the configuration: "ssh:" and
// the absolute path of the ssh_config file in use (~/.ssh/config when
// --config is not given), its tail kept within 128 characters. Two
// registrations reading the same configuration address the same hosts.
func DefaultInstance(sshConfig string) string {
	p := sshConfig
	if p == "" {
		p = sshclient.ExpandTilde("~/.ssh/config")
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	inst := "ssh:" + p
	if len(inst) > 128 {
		inst = "ssh:…" + inst[len(inst)-120:]
	}
	return inst
}

// Seams is the declaration: the link, and tmuxjob's job seam (kind "ssh")
// with its channel named channel (the plugin's registered name).
func Seams(channel string) protocol.Seams {
	s := tmuxjob.Seams(JobKind, channel, []string{protocol.PhaseAgent})
	s.Link = &protocol.LinkSeam{
		Fetch:           true,
		Push:            protocol.Bool(true),
		Slots:           protocol.SlotsSelf,
		RemoteOnTimeout: protocol.RemoteStopping,
		// A remote process that leaves the script's process group (setsid,
		// a daemon) cannot be seen from the link: quiescence is not provable.
		Quiescence:     protocol.QuiescenceUnprovable,
		MaxScriptBytes: MaxScriptBytes,
		// agent: the same steps as job.checkSteps' (agentSteps).
		Checks: []string{protocol.PhaseReach, protocol.PhaseAgent},
	}
	return s
}

// Options builds the Serve options.
func (b *Backend) Options() protocol.Options {
	inst := b.cfg.Instance
	if inst == "" {
		inst = DefaultInstance(b.cfg.SSHConfig)
	}
	h := b.jobHandlers()
	h.Add(
		protocol.MethodLinkExec.Serve(b.execScript),
		protocol.MethodLinkFetch.Serve(b.fetch),
		protocol.MethodLinkPush.Serve(b.push),
		protocol.MethodLinkCheckSteps.Serve(b.checkSteps),
	)
	return protocol.Options{
		Instance: inst,
		Seams:    Seams(b.cfg.Channel),
		Handlers: h,
		Stop:     b.Stop,
	}
}

func (b *Backend) track(r *run) {
	b.mu.Lock()
	b.runs[r] = struct{}{}
	b.mu.Unlock()
}

func (b *Backend) untrack(r *run) {
	b.mu.Lock()
	delete(b.runs, r)
	b.mu.Unlock()
}

// Stop stops every script in flight the way a timeout does (their groups
// killed over the control sessions), waits for the stops within ctx, then
// closes the connections and kills local helpers (git, shims).
func (b *Backend) Stop(ctx context.Context) {
	b.mu.Lock()
	runs := make([]*run, 0, len(b.runs))
	for r := range b.runs {
		runs = append(runs, r)
	}
	b.mu.Unlock()
	for _, r := range runs {
		r.stop(b)
	}
	waited := 0
wait:
	for _, r := range runs {
		select {
		case <-r.stopped:
			waited++
		case <-ctx.Done():
			break wait
		}
	}
	if waited < len(runs) {
		b.log.Warn("remote scripts not proven stopped at exit; their watchdogs remain", "count", len(runs)-waited)
	}
	proc.KillAll()
	b.mu.Lock()
	sh := b.shim
	b.mu.Unlock()
	if sh != nil {
		sh.close()
	}
	b.pool.closeAll()
}

// Close releases everything without waiting (tests).
func (b *Backend) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	b.Stop(ctx)
}
