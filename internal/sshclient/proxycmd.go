package sshclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/mu-org/mu-plugins/internal/proc"
)

// proxyConn is a net.Conn over a ProxyCommand's stdin and stdout, run as
// ssh runs it: `$SHELL -c 'exec CMD'` (/bin/sh when SHELL is unset), with
// OpenSSH's tokens expanded, inherited environment, in the plugin's
// process group (internal/proc), and killed with its whole tree when the
// connection closes.
type proxyConn struct {
	in      io.WriteCloser
	out     io.ReadCloser
	cancel  context.CancelFunc
	exited  chan struct{} // closed once the command and its tree are gone
	stderr  *tailBuffer
	command string

	mu      sync.Mutex
	exitErr error // how the command ended
}

// startProxyCommand starts command (tokens already expanded).
func startProxyCommand(command string) (*proxyConn, error) {
	shell := os.Getenv("SHELL")
	if shell == "" {
		shell = "/bin/sh"
	}
	cmd := exec.Command(shell, "-c", "exec "+command)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		in.Close()
		return nil, err
	}
	p := &proxyConn{in: in, out: out, exited: make(chan struct{}), stderr: &tailBuffer{max: 2048}, command: command}
	cmd.Stderr = p.stderr
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() {
		defer close(p.exited)
		res, err := proc.Run(ctx, cmd, proc.Options{KillLeftovers: true, WaitDelay: 500 * time.Millisecond})
		p.mu.Lock()
		defer p.mu.Unlock()
		switch {
		case err != nil:
			p.exitErr = err
		case res.ExitCode >= 0: // it exited by itself, even if a close raced it
			p.exitErr = fmt.Errorf("exited with status %d", res.ExitCode)
		default:
			p.exitErr = errors.New("was stopped")
		}
	}()
	return p, nil
}

func (p *proxyConn) Read(b []byte) (int, error)  { return p.out.Read(b) }
func (p *proxyConn) Write(b []byte) (int, error) { return p.in.Write(b) }

// Close ends the command and its tree.
func (p *proxyConn) Close() error {
	p.in.Close()
	p.cancel()
	<-p.exited
	return nil
}

// status says how the command ended, with the last line of its stderr,
// or "" while it runs.
func (p *proxyConn) status() string {
	select {
	case <-p.exited:
	case <-time.After(200 * time.Millisecond): // let a failing command finish first
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.exitErr.Error()
	if l := p.stderr.lastLine(); l != "" {
		s += ": " + l
	}
	return s
}

type proxyAddr struct{}

func (proxyAddr) Network() string { return "proxycommand" }
func (proxyAddr) String() string  { return "proxycommand:0" }

func (p *proxyConn) LocalAddr() net.Addr  { return proxyAddr{} }
func (p *proxyConn) RemoteAddr() net.Addr { return proxyAddr{} }

type readDeadliner interface{ SetReadDeadline(time.Time) error }
type writeDeadliner interface{ SetWriteDeadline(time.Time) error }

func (p *proxyConn) SetDeadline(t time.Time) error {
	_ = p.SetReadDeadline(t)
	return p.SetWriteDeadline(t)
}

func (p *proxyConn) SetReadDeadline(t time.Time) error {
	if d, ok := p.out.(readDeadliner); ok {
		return d.SetReadDeadline(t)
	}
	return nil
}

func (p *proxyConn) SetWriteDeadline(t time.Time) error {
	if d, ok := p.in.(writeDeadliner); ok {
		return d.SetWriteDeadline(t)
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

// lastLine is the last non-empty line written, cut to 200 characters.
func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 200 {
		l = l[:200]
	}
	return SafeName(l)
}
