package sshclient

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// quickAck wraps a TCP connection so that every read re-arms TCP_QUICKACK.
// sshd leaves Nagle on for non-interactive sessions: after authentication it
// sends two small packets back to back, the second waits for our ACK, and
// Linux delays that ACK by 40 ms when we have nothing to send. Acking at
// once takes those 40 ms off the first call of every connection.
type quickAck struct {
	*net.TCPConn
	raw syscall.RawConn
}

func withQuickAck(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	q := &quickAck{TCPConn: tc, raw: raw}
	q.arm()
	return q
}

func (q *quickAck) arm() {
	_ = q.raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1)
	})
}

func (q *quickAck) Read(p []byte) (int, error) {
	n, err := q.TCPConn.Read(p)
	q.arm()
	return n, err
}
