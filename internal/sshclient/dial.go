package sshclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/mu-org/mu-plugins/protocol"
)

// Dialer connects to SSH destinations as OpenSSH's ssh does: the
// destination resolved by `ssh -G` (the same ssh_config and -o options), a
// running ControlMaster reused, ProxyCommand and ProxyJump followed, host
// keys checked against known_hosts, keys from the files and the agent
// OpenSSH would offer. mu-plugin-ssh and mu-plugin-docker's ssh:// Engines
// both connect through it.
type Dialer struct {
	res        *resolver
	knownHosts string // --known-hosts
	identity   string // --identity
	log        *slog.Logger
}

// NewDialer builds a Dialer from the embedding plugin's flags.
func NewDialer(cfg Config, log *slog.Logger) *Dialer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	res := newResolver(cfg.SSHConfig, cfg.Options)
	res.flagPrefix = cfg.FlagPrefix
	return &Dialer{res: res, knownHosts: cfg.KnownHosts, identity: cfg.Identity, log: log}
}

// Client is one authenticated SSH connection to a destination. Close it
// when done: that also ends its jump hosts and its ProxyCommand.
type Client struct {
	*gossh.Client
	Resolved *Resolved
	Route    string // how it was reached, for messages: "10.0.0.2:22", "ProxyCommand `…`", "ProxyJump a,b", "the ControlMaster at PATH (pid N)"
	HostKey  string // the host key and how it was verified
	AuthKey  string // the key that authenticated ("" through a ControlMaster)
	Master   bool   // sessions go through a running ControlMaster

	closers []io.Closer // what the connection rides on, innermost last
	done    chan struct{}
	once    sync.Once
}

// Done is closed once the connection is gone.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close closes the connection, then what it rode on.
func (c *Client) Close() error {
	err := c.Client.Close()
	c.once.Do(func() {
		for i := len(c.closers) - 1; i >= 0; i-- {
			c.closers[i].Close()
		}
	})
	return err
}

func (d *Dialer) newClient(r *Resolved, sc *gossh.Client, closers []io.Closer) *Client {
	c := &Client{Client: sc, Resolved: r, closers: closers, done: make(chan struct{})}
	go func() {
		_ = sc.Wait()
		close(c.done)
		c.Close()
	}()
	return c
}

// maxHops bounds ProxyJump chains (and a config that jumps in a loop).
const maxHops = 8

// Dial resolves dest and connects. Errors are *protocol.Error: human for
// the configuration, host keys and authentication (with a remedy),
// retryable when the host cannot be reached.
func (d *Dialer) Dial(ctx context.Context, dest string) (*Client, error) {
	r, err := d.res.Resolve(ctx, dest)
	if err != nil {
		return nil, err
	}
	return d.dialResolved(ctx, r, nil, 0)
}

// Resolve resolves dest as Dial does, without connecting.
func (d *Dialer) Resolve(ctx context.Context, dest string) (*Resolved, error) {
	return d.res.Resolve(ctx, dest)
}

// dialResolved connects to r: over its ControlMaster when one runs, else
// through via (a jump host), its ProxyCommand, its ProxyJump hosts, or
// straight over TCP.
func (d *Dialer) dialResolved(ctx context.Context, r *Resolved, via *Client, depth int) (*Client, error) {
	if depth > maxHops {
		return nil, protocol.HumanError("check the ProxyJump settings for a loop", "%s: more than %d jump hosts", SafeName(r.Alias), maxHops)
	}
	d.logResolved(r, via)
	if c, err := d.overMaster(ctx, r); c != nil || err != nil {
		if c != nil && via != nil {
			via.Close() // the master reaches the host by itself
		}
		return c, err
	}
	var nc net.Conn
	var closers []io.Closer
	var err error
	route, direct := r.Addr(), false
	switch {
	case via != nil:
		route = via.Route + " → " + r.Addr()
		nc, err = via.DialContext(ctx, "tcp", r.Addr())
		if err != nil {
			err = protocol.NotStarted(err, fmt.Sprintf("cannot reach %s (%s) through %s", SafeName(r.Alias), r.Addr(), SafeName(via.Resolved.Alias)))
		}
	case r.ProxyCommand != "":
		var p *proxyConn
		p, route, err = d.proxy(r)
		if p != nil {
			nc, closers = p, []io.Closer{p}
		}
	case len(r.ProxyJump) > 0:
		last, err := d.jumps(ctx, r, depth)
		if err != nil {
			return nil, err
		}
		target := withoutProxies(r)
		target.ControlPath = "" // already looked for above
		c, err := d.dialResolved(ctx, target, last, depth+1)
		if err != nil {
			last.Close()
			return nil, err
		}
		if !c.Master {
			c.Route = "ProxyJump " + strings.Join(r.ProxyJump, ",")
		}
		return c, nil
	default:
		nc, err = d.DialTCP(ctx, r)
		direct = true
	}
	if err != nil {
		return nil, err
	}
	c, err := d.handshake(ctx, r, nc, direct, route)
	if err != nil {
		for _, cl := range closers {
			cl.Close()
		}
		return nil, err
	}
	c.closers = append(c.closers, closers...)
	if via != nil {
		c.closers = append([]io.Closer{via}, c.closers...)
	}
	return c, nil
}

// withoutProxies is r reached through a jump host: its own ProxyJump and
// ProxyCommand no longer apply (as with ssh -J).
func withoutProxies(r *Resolved) *Resolved {
	cp := *r
	cp.ProxyJump, cp.ProxyCommand = nil, ""
	return &cp
}

// jumps connects through r's ProxyJump hosts as `ssh -J` does: the first
// hop with its whole configuration (its own ProxyCommand, ProxyJump or
// master), each next one through the previous one. It returns the last.
func (d *Dialer) jumps(ctx context.Context, r *Resolved, depth int) (*Client, error) {
	var via *Client
	for i, hop := range r.ProxyJump {
		hr, err := d.res.resolveHop(ctx, hop)
		if err == nil && i > 0 {
			hr = withoutProxies(hr)
		}
		var c *Client
		if err == nil {
			c, err = d.dialResolved(ctx, hr, via, depth+1)
		}
		if err != nil {
			if via != nil {
				via.Close()
			}
			return nil, wrapHop(err, hop)
		}
		via = c
	}
	return via, nil
}

func wrapHop(err error, hop string) error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		cp := *pe
		cp.Message = "jump host " + SafeName(strings.TrimSpace(hop)) + ": " + cp.Message
		return &cp
	}
	return err
}

// overMaster returns a client over r's running ControlMaster, as ssh uses
// one: ControlPath set and ControlMaster no, auto or autoask. With none
// running it returns nothing and the caller connects itself (where ssh,
// with auto, would become the master: the plugin never starts one).
func (d *Dialer) overMaster(ctx context.Context, r *Resolved) (*Client, error) {
	if r.ControlPath == "" {
		return nil, nil
	}
	path := r.show(r.ControlPath)
	switch r.ControlMaster {
	case "yes", "ask":
		d.log.Debug("ControlMaster "+r.ControlMaster+": ssh would start a master here, not use one; the plugin never starts one: connecting itself", "host", r.Alias)
		return nil, nil
	}
	m, err := r.RunningMaster(ctx)
	if err != nil {
		d.log.Info("ControlPath: no usable master; connecting directly", "host", r.Alias, "controlPath", path, "error", scrubPath(err, r.ControlPath))
		return nil, nil
	}
	if m == nil {
		d.log.Debug("ControlPath: no master running; connecting directly (the plugin never starts one)", "host", r.Alias, "controlPath", path)
		return nil, nil
	}
	if r.ControlMaster == "autoask" {
		return nil, r.refusal("ControlMaster", "autoask", "the master would ask to confirm each shared session, and the plugin's sessions (proxy mode) are never confirmed",
			"set ControlMaster auto for this host")
	}
	sc, err := m.dial(ctx)
	if err != nil {
		return nil, protocol.NotStarted(err, fmt.Sprintf("cannot open a session channel through %s", m))
	}
	d.log.Debug("using a running ControlMaster", "host", r.Alias, "controlPath", path, "masterPid", m.pid, "mode", "proxy (MUX_C_PROXY)")
	c := d.newClient(r, sc, nil)
	c.Route, c.Master = m.String(), true
	c.HostKey = "verified by " + m.String() + " when it connected"
	return c, nil
}

// proxy starts r's ProxyCommand, its tokens expanded.
func (d *Dialer) proxy(r *Resolved) (*proxyConn, string, error) {
	cmd, err := expandTokens(r.ProxyCommand, proxyTokens, r.tokens(), false)
	if err != nil {
		return nil, "", r.invalid("ProxyCommand", r.ProxyCommand, err)
	}
	route := "ProxyCommand `" + cmd + "`"
	d.log.Debug("executing ProxyCommand", "host", r.Alias, "command", cmd, "where", r.Where("ProxyCommand"))
	p, err := startProxyCommand(cmd)
	if err != nil {
		return nil, route, protocol.NotStarted(err, fmt.Sprintf("cannot start the %s for %s", route, SafeName(r.Alias)))
	}
	return p, route, nil
}

// DialTCP connects as ssh does: AddressFamily, BindAddress, and
// ConnectionAttempts tries one second apart, each within ConnectTimeout.
func (d *Dialer) DialTCP(ctx context.Context, r *Resolved) (net.Conn, error) {
	network := map[string]string{"inet": "tcp4", "inet6": "tcp6"}[r.AddressFamily]
	if network == "" {
		network = "tcp"
	}
	dialer := &net.Dialer{Timeout: connectTimeout(r)}
	if r.BindAddress != "" {
		la, err := net.ResolveTCPAddr(network, net.JoinHostPort(r.BindAddress, "0"))
		if err != nil {
			return nil, r.invalid("BindAddress", r.BindAddress, err)
		}
		dialer.LocalAddr = la
	}
	var err error
	for attempt := 0; attempt < r.ConnectionAttempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, protocol.NotStarted(ctx.Err(), "connecting to "+r.Addr())
			case <-time.After(time.Second):
			}
		}
		var nc net.Conn
		if nc, err = dialer.DialContext(ctx, network, r.Addr()); err == nil {
			d.log.Debug("connected", "host", r.Alias, "remote", nc.RemoteAddr().String(), "local", nc.LocalAddr().String())
			return withQuickAck(nc), nil
		}
	}
	return nil, protocol.NotStarted(err, fmt.Sprintf("cannot reach %s (%s)", SafeName(r.Alias), r.Addr()))
}

func connectTimeout(r *Resolved) time.Duration {
	if r.ConnectTimeout > 0 {
		return r.ConnectTimeout
	}
	return defaultConnectTimeout
}
