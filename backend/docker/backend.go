// Package docker is mu-plugin-docker's backend: Docker containers as mu's
// provider hosts (host.acquire, lookup, status, release), their link
// (link.exec, fetch, push, checkSteps), and detached agent jobs in them
// with their channel (internal/tmuxjob over the container's pooled exec
// channels), over the Engine API with github.com/moby/moby/client.
package docker

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/internal/creator"
	"github.com/mu-org/mu-plugins/internal/execchan"
	"github.com/mu-org/mu-plugins/internal/sandbox"
	"github.com/mu-org/mu-plugins/protocol"
)

// Labels every container the plugin creates carries.
const (
	LabelPlugin   = "org.mu-plugins.plugin"   // always "docker"
	LabelInstance = "org.mu-plugins.instance" // the plugin's instance
	LabelKey      = "org.mu-plugins.key"      // the acquire key
	LabelParams   = "org.mu-plugins.params"   // sha256 of the acquire's params
	LabelResult   = "org.mu-plugins.result"   // the acquire result (JSON, handle aside)
	LabelFence    = "org.mu-plugins.fence"    // "1" on a fence placeholder
	LabelCreator  = "org.mu-plugins.creator"  // the acquiring plugin process (internal/creator)
)

// Config is what the flags set (Flags).
type Config struct {
	// Context is --context: the docker context whose Engine to use ("": as
	// the docker CLI chooses). Config.Open resolves it into Endpoint.
	Context string
	// Endpoint is the Engine (ResolveEndpoint); the instance derives from it
	// unless Instance is set.
	Endpoint Endpoint
	Image    string            // the default image (the `image` param overrides it); "" requires the param
	Instance string            // "" derives it from the endpoint
	Prefix   string            // container names are <Prefix>-<hash of key>
	Labels   map[string]string // extra labels on every container created
	Self     string            // this binary, for git's ext:: transport; "" is os.Executable
	// Channel is the channel seam's name: the plugin's registered name
	// (Name); "" is ChannelName.
	Channel string
	// MaxSessions bounds the long-lived exec channels kept per container.
	MaxSessions int
	// AbandonAfter: a container an acquire created but never started, whose
	// creator cannot be checked (another machine's plugin), older than this,
	// is rolled back by lookup. 0 is InFlightMs; less than InFlightMs is for
	// tests only (a live acquire could lose its container).
	AbandonAfter time.Duration
	// SSH is the SSH layer's settings for an ssh:// endpoint (--ssh-*).
	SSH SSHFlags
}

// Flags registers the plugin's flags on fs, bound to c.
func (c *Config) Flags(fs *flag.FlagSet) {
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	fs.StringVar(&c.Context, "context", "", "the docker context whose Engine to use (else DOCKER_HOST, DOCKER_CONTEXT, the current context: as the docker CLI)")
	fs.StringVar(&c.Image, "image", "", "a host's image (the image param overrides it); never pulled. No default: see docs/docker.md, Images")
	fs.StringVar(&c.Instance, "instance", "", `the instance declared (default "docker-" and a hash of the Engine's address)`)
	fs.StringVar(&c.Prefix, "prefix", "mu", "container names are PREFIX-<hash of the acquire key>")
	fs.IntVar(&c.MaxSessions, "max-sessions", 8, "long-lived exec channels kept per container")
	fs.DurationVar(&c.AbandonAfter, "abandon-after", 0, "lookup removes a never-started container whose creator it cannot check, older than this (default inFlightMs, 2m; lower is for tests)")
	sandbox.LabelFlag(fs, c.Labels, "container")
	c.SSH.Flags(fs)
}

// Open resolves the Engine from --context and the environment, as the
// docker CLI does (ResolveEndpoint), and builds the backend (Open): its
// Serve options.
func (c *Config) Open(_ context.Context, log *slog.Logger) (protocol.Options, error) {
	ep, err := ResolveEndpoint(c.Context, os.Getenv)
	if err == nil {
		err = ep.UseSSH(c.SSH)
	}
	if err != nil {
		return protocol.Options{}, err
	}
	c.Endpoint = ep
	b, err := Open(*c, log)
	if err != nil {
		return protocol.Options{}, err
	}
	return b.Options(), nil
}

// Backend serves the seams against one Engine.
type Backend struct {
	cfg      Config
	api      engine
	log      *slog.Logger
	instance string
	// hosts are the instance's containers and their exec channels, what
	// the docker and k8s providers share (internal/sandbox).
	hosts *sandbox.Hosts
	// ssh is an ssh:// endpoint's SSH connection (nil for unix://, tcp://).
	ssh     *sshEngine
	reached atomic.Bool // the Engine answered once (reach)
}

var namePrefixRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,40}$`)

// Open builds the Backend for cfg.Endpoint, with a client for it. It asks
// the Engine nothing, and an ssh:// endpoint's host neither (the first call
// does, bounded: see reach), so a plugin whose Engine is down or hangs
// still answers the handshake.
func Open(cfg Config, log *slog.Logger) (*Backend, error) {
	c, err := cfg.Endpoint.NewClient(log)
	if err != nil {
		return nil, err
	}
	b, err := New(cfg, c, log)
	if err != nil {
		c.Close()
		return nil, err
	}
	b.ssh = c.ssh
	if cfg.Endpoint.Scheme() != "ssh" && cfg.Endpoint.SSH.set() {
		b.log.Warn("--ssh-* flags are for an ssh:// endpoint: unused", "endpoint", cfg.Endpoint.String())
	}
	b.log.Info("the Docker Engine", "endpoint", cfg.Endpoint.String(), "from", cfg.Endpoint.Source, "instance", b.instance)
	return b, nil
}

// New builds a Backend on api (a client for cfg.Endpoint). It asks the
// Engine nothing. The instance is cfg.Instance, else the endpoint's.
func New(cfg Config, api engine, log *slog.Logger) (*Backend, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = "mu"
	}
	if !namePrefixRE.MatchString(cfg.Prefix) {
		return nil, fmt.Errorf("--prefix %q: use letters, digits, '_', '.', '-' (at most 41), starting with a letter or digit", cfg.Prefix)
	}
	if cfg.Channel == "" {
		cfg.Channel = ChannelName
	}
	if err := sandbox.Defaults(&cfg.MaxSessions, &cfg.AbandonAfter, InFlightMs*time.Millisecond, &cfg.Self); err != nil {
		return nil, err
	}
	for k := range cfg.Labels {
		if strings.HasPrefix(k, "org.mu-plugins.") && !strings.HasPrefix(k, "org.mu-plugins.test") {
			return nil, fmt.Errorf("--label %s: the org.mu-plugins. namespace is the plugin's own", k)
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Backend{cfg: cfg, api: api, log: log}
	b.instance = cfg.Instance
	if b.instance == "" {
		if cfg.Endpoint.Host == "" {
			return nil, fmt.Errorf("no endpoint to derive the instance from: set --instance")
		}
		b.instance = cfg.Endpoint.Instance()
	}
	if err := sandbox.CheckInstanceName(b.instance); err != nil {
		return nil, err
	}
	b.hosts = sandbox.NewHosts(b, b.instance, cfg.Self, cfg.MaxSessions, creator.This())
	return b, nil
}

// Instance is the instance the plugin declares.
func (b *Backend) Instance() string { return b.instance }

// Options are the Serve options: the declaration, the handlers and the Stop
// hook (Name and Version are the caller's).
func (b *Backend) Options() protocol.Options {
	return protocol.Options{
		Instance: b.instance,
		Seams:    Seams(b.cfg.Channel),
		Handlers: b.Handlers(),
		Stop:     b.Stop,
	}
}

// Handlers is the method table (sandbox.Hosts.Methods): every call's
// target.host.instance checked first, every method but link.checkSteps
// waiting for the Engine (reach).
func (b *Backend) Handlers() protocol.Methods {
	return b.hosts.Methods(b.jobHandlers())
}

// Stop ends whatever the plugin still runs: the link's (sandbox.Hosts'
// Stop), then an ssh:// endpoint's SSH connection.
func (b *Backend) Stop(ctx context.Context) {
	b.hosts.Stop()
	if b.ssh != nil {
		b.ssh.Close()
	}
}

// labels are the labels of a container created for key.
func (b *Backend) labels(key string) map[string]string {
	l := map[string]string{LabelPlugin: "docker", LabelInstance: b.instance, LabelKey: key}
	for k, v := range b.cfg.Labels {
		l[k] = v
	}
	return l
}

// The Engine is a sandbox.Provider: its exec API, its errors, and the
// environment that pins git's bridge to it (BridgeEnv); its host methods
// (Acquire, Lookup, Status, Release, CheckSteps) and its gate (Reach).
var _ sandbox.Provider = (*Backend)(nil)

// HostName names a container in a message.
func (b *Backend) HostName(ctr string) string { return "container " + short(ctr) }

// HandleIs says what a docker host's handle is.
func (b *Backend) HandleIs() string { return "a container ID" }

// ProviderName names the Engine in a call's error.
func (b *Backend) ProviderName() string { return "the Engine" }

// OpenSession starts the exec channel's loop in ctr.
func (b *Backend) OpenSession(ctx context.Context, ctr string) (*execchan.Session, error) {
	return openSession(ctx, b.api, ctr)
}

// ExecOnce runs argv in ctr as a one-off exec: its exit code and stderr.
func (b *Backend) ExecOnce(ctx context.Context, ctr string, argv []string) (int, []byte, error) {
	code, _, stderr, err := execOnce(ctx, b.api, ctr, argv, nil, nil)
	return code, stderr, err
}

// APIError classifies an Engine API error for a reply.
func (b *Backend) APIError(err error, what string) error { return engineErr(err, what) }

// Owned checks that ctr is a host this plugin instance acquired (not a
// fence placeholder).
func (b *Backend) Owned(ctx context.Context, ctr string) error {
	ins, err := b.api.ContainerInspect(ctx, ctr, client.ContainerInspectOptions{})
	if err != nil {
		return engineErr(err, "inspecting container "+short(ctr))
	}
	l := labelsOf(ins.Container)
	if l[LabelPlugin] != "docker" || l[LabelInstance] != b.instance || l[LabelFence] == "1" {
		return protocol.Errorf(protocol.Permanent, "container %s is not a host of instance %q", short(ctr), b.instance)
	}
	return nil
}
