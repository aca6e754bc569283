package sshlink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mu-org/mu-plugins/protocol"
)

// Defaults where the user's configuration sets nothing.
const (
	defaultConnectTimeout = 30 * time.Second
	defaultAliveInterval  = 15 * time.Second
)

// pool holds one connection per destination for the invocation.
type pool struct {
	res         *resolver
	knownHosts  string
	identity    string
	maxSessions int
	log         *slog.Logger

	mu      sync.Mutex
	entries map[string]*entry
	closed  bool
}

type entry struct {
	lock chan struct{} // a dial in progress holds it
	c    *conn
}

// conn is one live SSH connection and its session slots.
type conn struct {
	r      *Resolved
	client *ssh.Client
	jumps  []*ssh.Client
	done   chan struct{} // closed once the connection is dead
	slots  *slots
	openMu sync.Mutex // serializes session opens

	ctlMu sync.Mutex
	ctl   *control
}

func newPool(res *resolver, knownHosts, identity string, maxSessions int, log *slog.Logger) *pool {
	return &pool{res: res, knownHosts: knownHosts, identity: identity, maxSessions: maxSessions, log: log, entries: map[string]*entry{}}
}

// get returns the destination's live connection, dialling it if needed.
func (p *pool) get(ctx context.Context, dest string) (*conn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, protocol.NotStarted(nil, "the plugin is shutting down")
	}
	e := p.entries[dest]
	if e == nil {
		e = &entry{lock: make(chan struct{}, 1)}
		p.entries[dest] = e
	}
	p.mu.Unlock()
	select {
	case e.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, protocol.NotStarted(ctx.Err(), "waiting for the connection to "+dest)
	}
	defer func() { <-e.lock }()
	if e.c != nil && !e.c.dead() {
		return e.c, nil
	}
	c, err := p.dial(ctx, dest)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		c.close()
		return nil, protocol.NotStarted(nil, "the plugin is shutting down")
	}
	e.c = c
	return c, nil
}

// all returns the live connections.
func (p *pool) all() []*conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*conn
	for _, e := range p.entries {
		if c := e.c; c != nil && !c.dead() {
			out = append(out, c)
		}
	}
	return out
}

// closeAll closes every connection; no new one is made after.
func (p *pool) closeAll() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	for _, c := range p.all() {
		c.close()
	}
}

func (p *pool) dial(ctx context.Context, dest string) (*conn, error) {
	r, err := p.res.Resolve(ctx, dest)
	if err != nil {
		return nil, protocol.HumanError("check the SSH configuration for this host (`ssh -G "+safeName(dest)+"`)", "cannot resolve %s: %v", safeName(dest), err)
	}
	var jumps []*ssh.Client
	var via *ssh.Client
	for _, hop := range r.ProxyJump {
		hr, err := p.res.Resolve(ctx, hopDest(strings.TrimSpace(hop)))
		if err != nil {
			closeClients(jumps)
			return nil, protocol.HumanError("check the ProxyJump setting for "+safeName(dest), "cannot resolve jump host %s: %v", safeName(hop), err)
		}
		hr.ProxyJump = nil
		c, err := p.handshake(ctx, hr, via)
		if err != nil {
			closeClients(jumps)
			return nil, wrapHop(err, hop)
		}
		jumps = append(jumps, c)
		via = c
	}
	client, err := p.handshake(ctx, r, via)
	if err != nil {
		closeClients(jumps)
		return nil, err
	}
	c := &conn{r: r, client: client, jumps: jumps, done: make(chan struct{}), slots: newSlots(p.maxSessions - 2)}
	go func() {
		_ = client.Wait()
		close(c.done)
		closeClients(jumps)
	}()
	go c.keepalive(p.log)
	c.warmControl(ctx)
	return c, nil
}

func wrapHop(err error, hop string) error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		cp := *pe
		cp.Message = "jump host " + safeName(hop) + ": " + cp.Message
		return &cp
	}
	return err
}

// handshake dials r (through via when set) and authenticates, all within
// ConnectTimeout: x/crypto's own Timeout covers only the TCP connect.
func (p *pool) handshake(ctx context.Context, r *Resolved, via *ssh.Client) (*ssh.Client, error) {
	timeout := r.ConnectTimeout
	if timeout <= 0 {
		timeout = defaultConnectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var nc net.Conn
	var err error
	if via == nil {
		nc, err = (&net.Dialer{}).DialContext(ctx, "tcp", r.Addr())
		if err == nil {
			nc = withQuickAck(nc)
		}
	} else {
		nc, err = via.DialContext(ctx, "tcp", r.Addr())
	}
	if err != nil {
		return nil, protocol.NotStarted(err, fmt.Sprintf("cannot reach %s (%s)", r.Alias, r.Addr()))
	}
	tr, err := newTrust(r, p.knownHosts)
	if err != nil {
		nc.Close()
		return nil, err
	}
	au := newAuth(r, p.identity)
	defer au.close()
	cfg := &ssh.ClientConfig{
		User:              r.User,
		Auth:              au.methods(),
		HostKeyCallback:   tr.callback(r.Alias),
		HostKeyAlgorithms: tr.algorithms(r.Addr()),
		Timeout:           timeout,
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	sc, chans, reqs, err := ssh.NewClientConn(nc, r.Addr(), cfg)
	stop()
	if err != nil {
		nc.Close()
		if f := tr.hostKeyFailure(); f != nil {
			return nil, f
		}
		if strings.Contains(err.Error(), "unable to authenticate") {
			return nil, au.failure(r, err)
		}
		if ctx.Err() != nil {
			return nil, protocol.NotStarted(ctx.Err(), fmt.Sprintf("SSH handshake with %s (%s) did not finish within %s", r.Alias, r.Addr(), timeout))
		}
		return nil, protocol.NotStarted(err, fmt.Sprintf("SSH handshake with %s (%s) failed", r.Alias, r.Addr()))
	}
	_ = nc.SetDeadline(time.Time{})
	return ssh.NewClient(sc, chans, reqs), nil
}

func (c *conn) dead() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *conn) close() {
	c.client.Close()
	closeClients(c.jumps)
}

// keepalive sends keepalive@openssh.com every ServerAliveInterval (OpenSSH
// answers with a failure; any answer means alive) and closes the connection
// after ServerAliveCountMax unanswered ones, so its calls fail fast.
func (c *conn) keepalive(log *slog.Logger) {
	every := c.r.ServerAliveInterval
	if every <= 0 {
		every = defaultAliveInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	missed := 0
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		answered := make(chan struct{})
		go func() {
			_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
			if err == nil {
				close(answered)
			}
		}()
		select {
		case <-answered:
			missed = 0
		case <-c.done:
			return
		case <-time.After(every):
			missed++
			if missed >= c.r.ServerAliveCountMax {
				log.Warn("connection unresponsive; closing", "host", c.r.Alias)
				c.close()
				return
			}
		}
	}
}

func closeClients(cs []*ssh.Client) {
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i].Close()
	}
}

// safeName keeps a destination printable in messages.
func safeName(s string) string {
	if len(s) > 100 {
		s = s[:100]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
