package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"sync"
	"time"

	"github.com/pkg/sftp"

	"github.com/mu-org/mu-plugins/protocol"
)

// Files to and from a host (a job's installed files, the view's log by
// offset) go over SFTP on the connection, not through a script's
// cat/base64: one SFTP session per connection, opened on first use and
// kept for the invocation. It holds one of the connection's session slots.
// A host with no SFTP subsystem says so once (the subsystem request is
// refused); the connection then remembers it, and tmuxjob falls back to
// its scripts.

// fileTimeout bounds one file operation when ctx sets no sooner deadline.
const fileTimeout = 2 * time.Minute

// errNoSFTP: the host has no SFTP subsystem (the request was refused).
var errNoSFTP = errors.New("the server has no SFTP subsystem")

// sftpState is a connection's SFTP session.
type sftpState struct {
	mu     sync.Mutex
	client *sftp.Client
	none   bool // the subsystem was refused: never asked again
}

// sftpClient returns the connection's SFTP client, opening it on first
// use; errNoSFTP when the server has none.
func (b *Backend) sftpClient(ctx context.Context, c *conn) (*sftp.Client, error) {
	c.files.mu.Lock()
	defer c.files.mu.Unlock()
	if c.files.none {
		return nil, errNoSFTP
	}
	if c.files.client != nil {
		return c.files.client, nil
	}
	sess, err := b.openSession(ctx, c, time.Now().Add(fileTimeout))
	if err != nil {
		return nil, err
	}
	release := func() {
		sess.Close()
		c.slots.closed()
	}
	in, err0 := sess.StdinPipe()
	out, err1 := sess.StdoutPipe()
	if err := errors.Join(err0, err1); err != nil {
		release()
		return nil, err
	}
	if err := sess.RequestSubsystem("sftp"); err != nil {
		release()
		if c.dead() {
			return nil, err
		}
		c.files.none = true
		b.log.Info("no SFTP subsystem on the host; files go through scripts", "host", c.r.Alias)
		return nil, errNoSFTP
	}
	cl, err := sftp.NewClientPipe(out, in)
	if err != nil {
		release()
		return nil, fmt.Errorf("starting SFTP: %w", err)
	}
	go func() {
		_ = cl.Wait()
		release()
		c.files.mu.Lock()
		if c.files.client == cl {
			c.files.client = nil
		}
		c.files.mu.Unlock()
	}()
	c.files.client = cl
	return cl, nil
}

// withSFTP runs fn on dest's SFTP client within ctx (and fileTimeout). When
// ctx ends first the client is closed (fn's request is abandoned) and the
// next call opens another. ok is false when the host has no SFTP
// subsystem: nothing was done. fn has returned when withSFTP does.
func (b *Backend) withSFTP(ctx context.Context, dest string, fn func(*sftp.Client) error) (ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, fileTimeout)
	defer cancel()
	c, err := b.pool.get(ctx, dest)
	if err != nil {
		return false, err
	}
	cl, err := b.sftpClient(ctx, c)
	if errors.Is(err, errNoSFTP) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	done := make(chan error, 1)
	go func() { done <- fn(cl) }()
	select {
	case err := <-done:
		return true, err
	case <-ctx.Done():
		// Closing the client fails fn's pending request at once; fn has
		// returned (and let go of what it wrote) before this does.
		cl.Close()
		<-done
		return true, ctx.Err()
	}
}

// WriteFile writes data to path on the host (relative to the login
// directory), mode perm, creating its directory: through a temporary file
// renamed into place, so a reader never sees half of it. ok is false when
// the host has no SFTP subsystem (nothing was written).
func (r runner) WriteFile(ctx context.Context, p string, data []byte, perm os.FileMode) (bool, error) {
	return r.b.withSFTP(ctx, r.dest, func(cl *sftp.Client) error {
		if err := cl.MkdirAll(path.Dir(p)); err != nil {
			return err
		}
		tmp := p + ".tmp." + strconv.Itoa(os.Getpid())
		f, err := cl.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = cl.Chmod(tmp, perm)
		}
		if err == nil {
			err = cl.PosixRename(tmp, p)
		}
		if err != nil {
			_ = cl.Remove(tmp)
		}
		return err
	})
}

// ReadFileAt reads at most max bytes of path on the host from offset off
// (fewer at its end; none past it). ok is false when the host has no SFTP
// subsystem.
func (r runner) ReadFileAt(ctx context.Context, p string, off int64, max int) ([]byte, bool, error) {
	var data []byte
	ok, err := r.b.withSFTP(ctx, r.dest, func(cl *sftp.Client) error {
		f, err := cl.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		buf := make([]byte, max)
		n, err := f.ReadAt(buf, off)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		data = buf[:n]
		return err
	})
	return data, ok, err
}

// sftpStep is the agent phase's sftp step: whether the host serves SFTP,
// which moves the jobs' files; without it they go through scripts (a
// warning, not a failure).
func (b *Backend) sftpStep(ctx context.Context, dest string) protocol.Step {
	ok, err := b.withSFTP(ctx, dest, func(cl *sftp.Client) error {
		_, err := cl.Getwd()
		return err
	})
	switch {
	case err != nil:
		return protocol.Step{Step: "sftp", OK: protocol.StepFailed, Detail: "SFTP on the connection failed: " + err.Error()}
	case !ok:
		return protocol.Step{Step: "sftp", OK: protocol.StepWarn, Detail: "the server has no SFTP subsystem: job files go through scripts instead. " +
			"To enable it, add `Subsystem sftp internal-sftp` to the host's sshd_config (OpenSSH; package openssh-server) and reload sshd"}
	}
	return protocol.Step{Step: "sftp", OK: protocol.StepPassed, Detail: "the server's SFTP subsystem answers"}
}
