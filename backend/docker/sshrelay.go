package docker

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/mu-org/mu-plugins/protocol"
)

// git's bridge is a process of its own. Over an ssh:// endpoint it would
// make an SSH connection of its own for each fetch and push (a second
// login: ~180 ms here, a second prompt from an agent that confirms each
// use, a second ProxyCommand). Instead, for the length of one call, the
// plugin serves the Engine on a unix socket in a private directory (mode
// 0700) whose every connection is a channel of its own SSH connection, and
// pins the bridge to it.

// BridgeEnv is the environment that points git's bridge at this plugin's
// Engine, and what ends it once the call is over.
func (b *Backend) BridgeEnv(ctx context.Context) (map[string]string, func(), error) {
	if b.ssh == nil {
		return b.cfg.Endpoint.PinEnv(os.Getenv), func() {}, nil
	}
	r, err := b.ssh.relay(ctx)
	if err != nil {
		return nil, nil, protocol.NotStarted(err, "serving the Engine to git's bridge")
	}
	local := Endpoint{Host: "unix://" + r.path, Context: DefaultContext, ConfigDir: b.cfg.Endpoint.ConfigDir}
	return local.PinEnv(os.Getenv), r.close, nil
}

// relayServer serves the Engine's socket at path until close.
type relayServer struct {
	path string
	ln   net.Listener
	dir  string

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
}

// relay starts a relayServer: each connection to it is a channel of the
// SSH connection to the Engine's socket (DialContext, bounded by ctx).
func (s *sshEngine) relay(ctx context.Context) (*relayServer, error) {
	dir, err := os.MkdirTemp("", "mu-docker-ssh-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "engine.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &relayServer{path: path, ln: ln, dir: dir, conns: map[net.Conn]bool{}}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := s.DialContext(ctx, "unix", s.socket)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			if r.closed {
				r.mu.Unlock()
				c.Close()
				up.Close()
				return
			}
			r.conns[c], r.conns[up] = true, true
			r.wg.Add(1)
			r.mu.Unlock()
			go r.serve(c, up)
		}
	}()
	return r, nil
}

// serve relays one connection both ways until both ends are done.
func (r *relayServer) serve(c, up net.Conn) {
	defer r.wg.Done()
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); pipe(up, c) }()
	go func() { defer both.Done(); pipe(c, up) }()
	both.Wait()
	c.Close()
	up.Close()
	r.mu.Lock()
	delete(r.conns, c)
	delete(r.conns, up)
	r.mu.Unlock()
}

// pipe copies src to dst, then half-closes dst: an exec's stdin ends with
// its client's CloseWrite.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// close stops serving and ends every relayed connection.
func (r *relayServer) close() {
	r.ln.Close()
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	os.RemoveAll(r.dir)
}
