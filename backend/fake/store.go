package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mu-org/mu-plugins/internal/safefile"
)

// Store keeps the World. Every call runs fn on a fresh copy under a lock;
// when fn returns nil and write is true the copy replaces the stored world.
// Two Stores on one directory (two invocations at once) serialise on flock,
// so neither corrupts the file nor loses the other's effect.
type Store interface {
	Do(ctx context.Context, write bool, fn func(w *World) error) error
}

// memStore keeps the world as JSON in memory: one invocation's world.
type memStore struct {
	mu  sync.Mutex
	buf []byte
}

func newMemStore() *memStore { return &memStore{} }

func (m *memStore) Do(ctx context.Context, write bool, fn func(w *World) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, err := decodeWorld(m.buf)
	if err != nil {
		return err
	}
	if err := fn(w); err != nil || !write {
		return err
	}
	b, err := encodeWorld(w, "")
	if err != nil {
		return err
	}
	m.buf = b
	return nil
}

// fileStore keeps the world in DIR/world.json, locked by flock on DIR/lock,
// replaced atomically (temp file, fsync, rename, fsync of the directory).
type fileStore struct {
	dir string
	mu  sync.Mutex // flock is per open file; serialise this process's own calls too
}

// newFileStore opens the state directory, creating it 0700. One that group
// or world can write, or that another user owns, is refused: whoever can
// write it can replace the world (and with it what the fake reports to mu).
func newFileStore(dir string) (*fileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("--state %s is not a directory", dir)
	}
	if perm := st.Mode().Perm(); perm&0o022 != 0 {
		return nil, fmt.Errorf("--state %s: group or others can write it (mode %04o), so another user could replace the fake's world; chmod 700 %s", dir, perm, dir)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("--state %s is owned by uid %d, not by this user (uid %d); use a directory of your own", dir, sys.Uid, os.Geteuid())
	}
	return &fileStore{dir: dir}, nil
}

func (s *fileStore) Do(ctx context.Context, write bool, fn func(w *World) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lf, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("state lock: %w", err)
	}
	defer lf.Close()
	how := unix.LOCK_SH
	if write {
		how = unix.LOCK_EX
	}
	if err := flock(ctx, int(lf.Fd()), how); err != nil {
		return err
	}
	defer unix.Flock(int(lf.Fd()), unix.LOCK_UN)

	path := filepath.Join(s.dir, "world.json")
	b, err := safefile.Read(path, safefile.MaxState)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("state: %w", err)
	}
	w, err := decodeWorld(b)
	if err != nil {
		return err
	}
	if err := fn(w); err != nil || !write {
		return err
	}
	out, err := encodeWorld(w, " ")
	if err != nil {
		return err
	}
	return writeAtomic(path, out)
}

// flock takes the lock, polling so that ctx can end the wait.
func flock(ctx context.Context, fd, how int) error {
	for {
		err := unix.Flock(fd, how|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("state lock: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("state lock: %w", ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// writeAtomic replaces path with b: a temp file beside it, fsynced, renamed
// over it, and the directory fsynced so the rename itself is durable. The
// temp file is made with O_EXCL under a random name (os.CreateTemp, mode
// 0600): a file or symlink planted there is never opened.
func writeAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// encodeWorld is the world as JSON; `<`, `>` and `&` are kept as they are
// (a message of them does not take six times its size on disk).
func encodeWorld(w *World, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeWorld(b []byte) (*World, error) {
	w := newWorld()
	if len(b) > 0 {
		if err := json.Unmarshal(b, w); err != nil {
			return nil, fmt.Errorf("state is corrupt: %w", err)
		}
	}
	w.fill()
	return w, nil
}
