package ssh

import (
	"context"
	"log/slog"
	"sync"

	gossh "golang.org/x/crypto/ssh"

	"github.com/mu-org/mu-plugins/internal/sshclient"
	"github.com/mu-org/mu-plugins/protocol"
)

// pool holds one connection per destination for the invocation.
type pool struct {
	dialer      *sshclient.Dialer
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
	r      *sshclient.Resolved
	cl     *sshclient.Client
	client *gossh.Client
	done   <-chan struct{} // closed once the connection is dead
	slots  *slots
	openMu sync.Mutex // serializes session opens

	ctlMu sync.Mutex
	ctl   *control

	files sftpState // the connection's SFTP session (files.go)
}

func newPool(d *sshclient.Dialer, maxSessions int, log *slog.Logger) *pool {
	return &pool{dialer: d, maxSessions: maxSessions, log: log, entries: map[string]*entry{}}
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
	cl, err := p.dialer.Dial(ctx, dest)
	if err != nil {
		return nil, err
	}
	c := &conn{r: cl.Resolved, cl: cl, client: cl.Client, done: cl.Done(), slots: newSlots(p.maxSessions - 2)}
	if !cl.Master {
		go cl.KeepAlive(p.log)
	}
	c.warmControl()
	return c, nil
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
	c.cl.Close()
}
