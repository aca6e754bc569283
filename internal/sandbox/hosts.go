package sandbox

import (
	"context"
	"sync"

	"github.com/mu-org/mu-plugins/internal/creator"
	"github.com/mu-org/mu-plugins/internal/execchan"
	"github.com/mu-org/mu-plugins/internal/proc"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// Provider is a provider of sandbox hosts: its own calls only, the rest
// is shared. backend/docker's Backend (the Docker Engine API) and
// backend/k8s's (Kubernetes' client-go) are its two implementations.
type Provider interface {
	Reach
	HostMethods
	Gate
}

// Reach is how the shared part reaches into the provider's hosts.
type Reach interface {
	// HostName is how a message names a host ("container 3f2a…", "pod
	// mu-…").
	HostName(host string) string
	// HandleIs says what a handle is, for a call without one ("a
	// container ID", "a pod name").
	HandleIs() string
	// Owned checks that host is one this instance acquired (not a fence
	// placeholder): an error is the call's answer.
	Owned(ctx context.Context, host string) error
	// OpenSession starts execchan.AgentScript on host over one exec
	// stream.
	OpenSession(ctx context.Context, host string) (*execchan.Session, error)
	// ExecOnce runs argv on host as a one-off exec and returns its exit
	// code and stderr once its output ended.
	ExecOnce(ctx context.Context, host string, argv []string) (int, []byte, error)
	// APIError classifies an error of the provider's API for a reply.
	APIError(err error, what string) error
	// BridgeEnv is the environment that points git's bridge (Bridge) at
	// this provider's hosts, and what ends it once the call is over.
	BridgeEnv(ctx context.Context) (map[string]string, func(), error)
}

// Hosts are one instance's hosts of a provider: the ones checked to be
// its own, their pooled exec channels and their jobs directories, and the
// acquires running in this process.
type Hosts struct {
	p           Provider
	self        string // this binary, for git's ext:: transport
	maxSessions int
	instance    string
	me          creator.Process

	mu        sync.Mutex
	pools     map[string]*execchan.Pool // host → its exec channels
	ours      map[string]bool           // hosts checked to be this instance's
	acquiring map[string]int            // keys with an acquire running in this process
	roots     tmuxjob.Roots             // host → its jobs directory
	watches   tmuxjob.HostWatches       // host → its watches, on one run
}

// NewHosts are instance's hosts over p; self is this binary (git's ext::
// transport runs it), maxSessions bounds each host's open channels, me is
// this process as acquire records it (internal/creator).
func NewHosts(p Provider, instance, self string, maxSessions int, me creator.Process) *Hosts {
	return &Hosts{p: p, instance: instance, self: self, maxSessions: maxSessions, me: me,
		pools: map[string]*execchan.Pool{}, ours: map[string]bool{}, acquiring: map[string]int{}}
}

// Pool is host's exec channels (opened as calls need them). A Pool is also
// tmuxjob's Runner on host.
func (h *Hosts) Pool(host string) *execchan.Pool {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.pools[host]
	if p == nil {
		p = execchan.NewPool(execchan.Backend{
			Open: func(ctx context.Context) (*execchan.Session, error) { return h.p.OpenSession(ctx, host) },
			Stop: func(ctx context.Context, mark string) error { return h.StopRun(ctx, host, mark) },
			OpenErr: func(err error) error {
				return h.p.APIError(err, "opening an exec channel in "+h.p.HostName(host))
			},
		}, h.maxSessions)
		h.pools[host] = p
	}
	return p
}

// DropPool closes host's channels (it is being removed, or gone).
func (h *Hosts) DropPool(host string) {
	h.mu.Lock()
	p := h.pools[host]
	delete(h.pools, host)
	h.mu.Unlock()
	if p != nil {
		p.Close()
	}
}

// Forget drops host's channels and all that was learnt of it: a host of
// the same name later is checked and asked again.
func (h *Hosts) Forget(host string) {
	h.mu.Lock()
	delete(h.ours, host)
	h.mu.Unlock()
	h.roots.Forget(host)
	h.watches.Forget(host)
	h.DropPool(host)
}

// Stop ends what the link still runs as the plugin stops: the local git
// helpers of a fetch or push (internal/proc), and every host's channels
// (each channel's loop exits on its stdin's EOF).
func (h *Hosts) Stop() {
	proc.KillAll()
	h.mu.Lock()
	pools := h.pools
	h.pools = map[string]*execchan.Pool{}
	h.mu.Unlock()
	for _, p := range pools {
		p.Close()
	}
}

// Remember records host as checked to be this instance's.
func (h *Hosts) Remember(host string) {
	h.mu.Lock()
	h.ours[host] = true
	h.mu.Unlock()
}

// Handle is the call's host: target.host.handle (its instance was checked
// by the method table).
func (h *Hosts) Handle(t protocol.Target) (string, error) {
	if t.Host.Handle == "" {
		return "", protocol.Errorf(protocol.Permanent, "target.host.handle is required (%s from host.acquire)", h.p.HandleIs())
	}
	return t.Host.Handle, nil
}

// HostOf is the call's host, checked (once per invocation) to be a host
// this instance acquired: a link call never runs in another's, nor in a
// fence placeholder.
func (h *Hosts) HostOf(ctx context.Context, t protocol.Target) (string, error) {
	host, err := h.Handle(t)
	if err != nil {
		return "", err
	}
	h.mu.Lock()
	ok := h.ours[host]
	h.mu.Unlock()
	if ok {
		return host, nil
	}
	if err := h.p.Owned(ctx, host); err != nil {
		return "", err
	}
	h.Remember(host)
	return host, nil
}

// InFlight counts the acquires of key running in this process (d is 1 as
// one starts, -1 as it ends), for Creator.
func (h *Hosts) InFlight(key string, d int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.acquiring[key] += d
	if h.acquiring[key] <= 0 {
		delete(h.acquiring, key)
	}
}

// Abandoned tells a host whose acquire is over, so that lookup may roll
// it back: its creator (label, a creator.Process) no longer runs, or, when
// that cannot be checked, tooOld says so. This process's own acquire is in
// flight only while an acquire of the key runs here.
func (h *Hosts) Abandoned(label, key string, tooOld func() bool) bool {
	var live creator.Liveness
	if label != "" && label == h.me.String() {
		h.mu.Lock()
		live = creator.Gone
		if h.acquiring[key] > 0 {
			live = creator.Alive
		}
		h.mu.Unlock()
	} else {
		live = creator.Of(label, h.me)
	}
	switch live {
	case creator.Gone:
		return true
	case creator.Alive:
		return false
	}
	return tooOld()
}

// Me is this process as acquire records it on a host.
func (h *Hosts) Me() creator.Process { return h.me }

// Instance is the instance whose hosts these are.
func (h *Hosts) Instance() string { return h.instance }
