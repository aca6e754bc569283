// Package k8s is mu-plugin-k8s's backend: Kubernetes pods as mu's provider
// hosts (host.acquire, lookup, status, release), their link over the pods/exec
// subresource (link.exec, fetch, push, checkSteps), and detached agent jobs
// in them with their channel (internal/tmuxjob over the pod's pooled exec
// channels, internal/execchan), with k8s.io/client-go.
package k8s

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/mu-org/mu-plugins/internal/creator"
	"github.com/mu-org/mu-plugins/internal/sandbox"
	"github.com/mu-org/mu-plugins/protocol"
)

// Labels and annotations on every pod the plugin creates. Label values are
// at most 63 characters, so the key itself is an annotation.
const (
	LabelPlugin    = "org.mu-plugins/plugin"   // always "k8s"
	LabelInstance  = "org.mu-plugins/instance" // the plugin's instance
	LabelFence     = "org.mu-plugins/fence"    // "1" on a fence placeholder
	AnnotKey       = "org.mu-plugins/key"      // the acquire key
	AnnotParams    = "org.mu-plugins/params"   // sha256 of the acquire's params
	AnnotResult    = "org.mu-plugins/result"   // the acquire result (JSON, handle aside)
	AnnotCreator   = "org.mu-plugins/creator"  // the acquiring plugin process (internal/creator)
	containerName  = "host"                    // the pod's one container
	defaultPrefix  = "mu"
	pluginLabelVal = "k8s"
)

// Config is what the flags set (Flags).
type Config struct {
	Kubeconfig string // --kubeconfig ("": KUBECONFIG, ~/.kube/config, in-cluster)
	Context    string // --context ("": the current context)
	Namespace  string // --namespace ("": the context's)
	// Target is the resolved cluster (Config.Open fills it in).
	Target   Target
	Image    string            // the default image (the image param overrides it)
	Instance string            // "" derives it from the cluster's CA and the namespace
	Prefix   string            // pod names are <Prefix>-<hash of key>
	Labels   map[string]string // extra labels on every pod created
	Self     string            // this binary, for git's ext:: transport; "" is os.Executable
	// RunAsUser is the UID a pod's container runs as unless the runAsUser
	// param says; 0 leaves it to the image (which must then name a numeric
	// non-root USER: runAsNonRoot is always set).
	RunAsUser   int64
	MaxSessions int // long-lived exec channels kept per pod
	// AbandonAfter: a pod an acquire created that cannot become ready,
	// whose creator cannot be checked, older than this, is rolled back by
	// lookup. 0 is InFlightMs.
	AbandonAfter time.Duration
}

// Flags registers the plugin's flags on fs, bound to c.
func (c *Config) Flags(fs *flag.FlagSet) {
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "the kubeconfig file (else KUBECONFIG, ~/.kube/config, or the in-cluster configuration: as kubectl)")
	fs.StringVar(&c.Context, "context", "", "the kubeconfig context (default: its current context)")
	fs.StringVar(&c.Namespace, "namespace", "", "the namespace of the pods (default: the context's, else default)")
	fs.StringVar(&c.Image, "image", "", "a host's image (the image param overrides it). No default: see docs/k8s.md")
	fs.StringVar(&c.Instance, "instance", "", `the instance declared (default "k8s-" and a hash of the cluster's CA and the namespace)`)
	fs.StringVar(&c.Prefix, "prefix", defaultPrefix, "pod names are PREFIX-<hash of the acquire key>")
	fs.Int64Var(&c.RunAsUser, "run-as-user", 0, "the UID pods run as unless the runAsUser param says (0: the image's numeric USER)")
	fs.IntVar(&c.MaxSessions, "max-sessions", 8, "long-lived exec channels kept per pod")
	fs.DurationVar(&c.AbandonAfter, "abandon-after", 0, "lookup removes a pod that cannot start whose creator it cannot check, older than this (default inFlightMs; lower is for tests)")
	sandbox.LabelFlag(fs, c.Labels, "pod")
}

// Open resolves the cluster as kubectl does (ResolveTarget) and builds the
// backend: its Serve options. It asks the API server nothing.
func (c *Config) Open(_ context.Context, log *slog.Logger) (protocol.Options, error) {
	t, err := ResolveTarget(c.Kubeconfig, c.Context, c.Namespace)
	if err != nil {
		return protocol.Options{}, err
	}
	c.Target = t
	// client-go's own log lines (klog) go to the plugin's log, not raw to
	// stderr.
	klog.SetSlogLogger(log)
	b, err := New(*c, log)
	if err != nil {
		return protocol.Options{}, err
	}
	return b.Options(), nil
}

// Backend serves the seams against one cluster and namespace.
type Backend struct {
	cfg      Config
	cs       kubernetes.Interface
	ns       string
	log      *slog.Logger
	instance string
	// hosts are the instance's pods and their exec channels, what the
	// docker and k8s providers share (internal/sandbox).
	hosts   *sandbox.Hosts
	reached atomic.Bool
}

var prefixRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?$`)

// New builds a Backend for cfg.Target. It asks the API server nothing.
func New(cfg Config, log *slog.Logger) (*Backend, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = defaultPrefix
	}
	if !prefixRE.MatchString(cfg.Prefix) {
		return nil, fmt.Errorf("--prefix %q: use lower-case letters, digits and '-' (at most 22), starting and ending with a letter or digit", cfg.Prefix)
	}
	if err := sandbox.Defaults(&cfg.MaxSessions, &cfg.AbandonAfter, InFlightMs*time.Millisecond, &cfg.Self); err != nil {
		return nil, err
	}
	for k := range cfg.Labels {
		if strings.HasPrefix(k, "org.mu-plugins/") {
			return nil, fmt.Errorf("--label %s: the org.mu-plugins/ prefix is the plugin's own", k)
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hc, err := rest.HTTPClientFor(cfg.Target.REST)
	if err != nil {
		return nil, err
	}
	// Every request ends with its call's context, even one client-go
	// holds while a credential helper runs.
	hc.Transport = deadlineBound{hc.Transport}
	cs, err := kubernetes.NewForConfigAndClient(cfg.Target.REST, hc)
	if err != nil {
		return nil, err
	}
	b := &Backend{cfg: cfg, cs: cs, ns: cfg.Target.Namespace, log: log}
	b.instance = cfg.Instance
	if b.instance == "" {
		if b.instance, err = cfg.Target.Instance(); err != nil {
			return nil, err
		}
	}
	if err := sandbox.CheckInstanceName(b.instance); err != nil {
		return nil, err
	}
	b.hosts = sandbox.NewHosts(b, b.instance, cfg.Self, cfg.MaxSessions, creator.This())
	log.Info("the cluster", "server", cfg.Target.REST.Host, "context", cfg.Target.Context, "namespace", b.ns,
		"from", cfg.Target.Source, "instance", b.instance)
	return b, nil
}

// Options are the Serve options.
func (b *Backend) Options() protocol.Options {
	return protocol.Options{Instance: b.instance, Seams: Seams(), Handlers: b.Handlers(), Stop: b.Stop}
}

// Handlers is the method table (sandbox.Hosts.Methods): every call's
// target.host.instance checked first, every method but link.checkSteps
// waiting until the API server was reached once (reach).
func (b *Backend) Handlers() protocol.Methods {
	return b.hosts.Methods(b.jobHandlers())
}

// Stop ends whatever the plugin still runs: the link's (sandbox.Hosts'
// Stop).
func (b *Backend) Stop(ctx context.Context) { b.hosts.Stop() }
