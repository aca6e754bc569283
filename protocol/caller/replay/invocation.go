package replay

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// An invocation is one mu command's life (GLOSSARY: every `mu …` command is
// one invocation). The spec: after a crash, a timeout or unknown-outcome,
// "the next verb on the subject resolves it, and refuses while the
// invocation that wrote it … still lives". So a Journal is opened as one
// invocation, which holds an flock on DIR/invocations/<id>.lock until
// Close (or until its process dies: the kernel drops the lock), and every
// intent it writes records that id. Resolve refuses an intent written by
// its own invocation, or by one whose lock is still held: a lock, unlike a
// pid, cannot be reused by an unrelated process, and it tells two
// invocations in one process apart.

func newInvocation(dir string) (id string, lock *os.File, err error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, err
	}
	id = hex.EncodeToString(b[:])
	f, err := os.OpenFile(invocationLock(dir, id), os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("replay journal: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", nil, fmt.Errorf("replay journal: lock the invocation: %w", err)
	}
	return id, f, nil
}

func invocationLock(dir, id string) string {
	return filepath.Join(dir, "invocations", id+".lock")
}

// invocationLives tells whether the invocation id still holds its lock. A
// lock file that is gone belongs to an invocation that ended.
func (j *Journal) invocationLives(id string) (bool, error) {
	f, err := os.OpenFile(invocationLock(j.dir, id), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false, nil
}

// Invocation is the id of the invocation this Journal is.
func (j *Journal) Invocation() string { return j.inv }

// Close ends the invocation: from then on the intents it wrote can be
// resolved by the next one. The Journal must not be used after Close
// (Next starts the next invocation in its place).
func (j *Journal) Close() error {
	if j.lock == nil {
		return nil
	}
	err := os.Remove(j.lock.Name())
	if cerr := j.lock.Close(); err == nil {
		err = cerr
	}
	j.lock = nil
	return err
}

// Next ends this invocation and begins the next on the same journal, in
// place: what mu's next command does after this one exits. Tests that
// play several of mu's commands in one process call it where one command
// ends and the next begins.
func (j *Journal) Next() error {
	if err := j.Close(); err != nil {
		return err
	}
	id, lock, err := newInvocation(j.dir)
	if err != nil {
		return err
	}
	j.inv, j.lock = id, lock
	return nil
}

// writerLives is the spec's guard: the invocation that wrote in (this one,
// or another whose lock is held) still lives. An intent written before
// invocations were recorded falls back to its writer's pid.
func (j *Journal) writerLives(in *Intent) (bool, string, error) {
	switch {
	case in.Invocation == j.inv:
		return true, "this invocation wrote it: the next one resolves it", nil
	case in.Invocation != "":
		alive, err := j.invocationLives(in.Invocation)
		return alive, fmt.Sprintf("invocation %s (pid %d) wrote it and still lives", in.Invocation, in.WriterPID), err
	default:
		return in.WriterPID != os.Getpid() && pidAlive(in.WriterPID), fmt.Sprintf("pid %d wrote the intent and still lives", in.WriterPID), nil
	}
}
