package sshclient

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// A running ControlMaster (OpenSSH's connection sharing, PROTOCOL.mux):
// when the config names a ControlPath and a master listens there, `ssh`
// opens its sessions over that master instead of connecting, and so does
// the plugin. It never starts a master.
//
// The plugin asks the master for proxy mode (MUX_C_PROXY, OpenSSH 7.4+)
// rather than passenger sessions (MUX_C_NEW_SESSION with descriptor
// passing): over the control socket it then speaks the SSH connection
// protocol itself, so a session over the master is an x/crypto session
// like any other, with its exit status and signal, the kill-safe wrapper,
// the control session that stops scripts, the slots and the git shim all
// unchanged. x/crypto implements the client side (gossh.NewControlClientConn).
// Before that, a MUX_C_ALIVE_CHECK on its own connection proves the
// master alive and gives its pid.

// Mux message numbers (PROTOCOL.mux section 11).
const (
	muxHello      = 0x00000001
	muxAliveCheck = 0x10000004
	muxSAlive     = 0x80000005
	muxVersion    = 4
)

// Master is a running ControlMaster found for a destination.
type Master struct {
	path     string // for messages
	dialPath string // the socket
	pid      int
}

// ProbeMaster connects to path and runs an alive check. No master (no
// socket, or a stale one nobody listens on) is (nil, nil), as for ssh,
// which then connects by itself.
func ProbeMaster(ctx context.Context, path string) (*Master, error) {
	nc, err := (&net.Dialer{}).DialContext(ctx, "unix", path)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOTSOCK) {
			return nil, nil
		}
		return nil, err
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	} else {
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	}
	if err := muxWrite(nc, muxHello, muxVersion); err != nil {
		return nil, err
	}
	if err := muxWrite(nc, muxAliveCheck, 1); err != nil {
		return nil, err
	}
	typ, body, err := muxRead(nc)
	if err != nil {
		return nil, fmt.Errorf("no mux hello: %w", err)
	}
	if typ != muxHello || len(body) < 4 || binary.BigEndian.Uint32(body) != muxVersion {
		return nil, fmt.Errorf("the master speaks mux message %#x version %v, not hello version %d", typ, body, muxVersion)
	}
	typ, body, err = muxRead(nc)
	if err != nil {
		return nil, fmt.Errorf("no alive reply: %w", err)
	}
	if typ != muxSAlive || len(body) < 8 || binary.BigEndian.Uint32(body) != 1 {
		return nil, fmt.Errorf("unexpected mux reply %#x to the alive check", typ)
	}
	return &Master{path: path, dialPath: path, pid: int(binary.BigEndian.Uint32(body[4:]))}, nil
}

// RunningMaster probes r's ControlPath; the master is named by the path
// as the config shows it (never an environment value).
func (r *Resolved) RunningMaster(ctx context.Context) (*Master, error) {
	m, err := ProbeMaster(ctx, r.ControlPath)
	if m != nil {
		m.dialPath, m.path = m.path, r.show(r.ControlPath)
	}
	return m, err
}

// dial opens a proxy-mode connection to the master and returns a client
// over it.
func (m *Master) dial(ctx context.Context) (*gossh.Client, error) {
	nc, err := (&net.Dialer{}).DialContext(ctx, "unix", m.dialPath)
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), m.dialPath, m.path))
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	c, chans, reqs, err := gossh.NewControlClientConn(nc)
	stop()
	if err != nil {
		nc.Close()
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	return gossh.NewClient(c, chans, reqs), nil
}

func (m *Master) String() string {
	return fmt.Sprintf("the ControlMaster at %s (pid %d)", m.path, m.pid)
}

// muxWrite writes one mux message of uint32 fields.
func muxWrite(w io.Writer, typ uint32, fields ...uint32) error {
	b := make([]byte, 8, 8+4*len(fields))
	binary.BigEndian.PutUint32(b[0:], uint32(4+4*len(fields)))
	binary.BigEndian.PutUint32(b[4:], typ)
	for _, f := range fields {
		b = binary.BigEndian.AppendUint32(b, f)
	}
	_, err := w.Write(b)
	return err
}

// muxRead reads one mux message: its type and body.
func muxRead(r io.Reader) (uint32, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 4 || n > 1<<16 {
		return 0, nil, fmt.Errorf("mux message of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, nil, err
	}
	return binary.BigEndian.Uint32(b), b[4:], nil
}
