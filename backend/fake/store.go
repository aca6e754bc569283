package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
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
	b, err := json.Marshal(w)
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

func newFileStore(dir string) (*fileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	return &fileStore{dir: dir}, nil
}

func (s *fileStore) Do(ctx context.Context, write bool, fn func(w *World) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lf, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
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
	b, err := os.ReadFile(path)
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
	out, err := json.MarshalIndent(w, "", " ")
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
// over it, and the directory fsynced so the rename itself is durable.
func writeAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".tmp-"+strconv.Itoa(os.Getpid()))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
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
