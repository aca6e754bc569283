package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoIntent: the intent is not (or no longer) in the journal: a definite
// answer or another resolver deleted it.
var ErrNoIntent = errors.New("no such intent in the journal")

// ErrBusy: another Effect or Resolve holds the intent.
var ErrBusy = errors.New("the intent is held by another writer or resolver")

// Journal is a directory of intents:
//
//	DIR/intents/<id>.json  one intent each
//	DIR/locks/<id>.lock    flock'ed while an Effect sends it or a Resolve resolves it
//	DIR/agents/<hash>      the id of the newest delivery written to an agent
//	DIR/lock               flock'ed around every write
//	DIR/invocations/<id>.lock  flock'ed by each open Journal: one invocation of mu
//
// Several processes, and several invocations, may share one journal.
type Journal struct {
	dir  string
	inv  string   // this invocation's id
	lock *os.File // its lock, held until Close
	// Now is the clock (tests may set it); nil is time.Now.
	Now func() time.Time
}

// Open opens (creating) the journal in dir as a new invocation of mu,
// which lives until Close or its process's end.
func Open(dir string) (*Journal, error) {
	for _, d := range []string{"intents", "locks", "agents", "invocations"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("replay journal: %w", err)
		}
	}
	id, lock, err := newInvocation(dir)
	if err != nil {
		return nil, err
	}
	return &Journal{dir: dir, inv: id, lock: lock}, nil
}

// Dir is the journal's directory.
func (j *Journal) Dir() string { return j.dir }

func (j *Journal) now() time.Time {
	if j.Now != nil {
		return j.Now()
	}
	return time.Now()
}

func (j *Journal) path(id string) string { return filepath.Join(j.dir, "intents", id+".json") }

// Load reads one intent.
func (j *Journal) Load(id string) (*Intent, error) {
	b, err := os.ReadFile(j.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", id, ErrNoIntent)
	}
	if err != nil {
		return nil, err
	}
	var in Intent
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("intent %s: %w", id, err)
	}
	return &in, nil
}

// List returns every intent in the journal, by id.
func (j *Journal) List() ([]*Intent, error) {
	ents, err := os.ReadDir(filepath.Join(j.dir, "intents"))
	if err != nil {
		return nil, err
	}
	var out []*Intent
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		in, err := j.Load(id)
		if errors.Is(err, ErrNoIntent) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out, nil
}

// write stores in atomically and, for a delivery, marks it the agent's
// newest unless it already is.
func (j *Journal) write(in *Intent, newDelivery bool) error {
	// Compact, no HTML escaping: Params stay their exact bytes.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(in); err != nil {
		return err
	}
	b := buf.Bytes()
	return j.locked(func() error {
		if err := atomicWrite(j.path(in.ID), b); err != nil {
			return err
		}
		if newDelivery && in.Agent != "" {
			return atomicWrite(filepath.Join(j.dir, "agents", agentMarker(in.Plugin, in.Agent)), []byte(in.ID))
		}
		return nil
	})
}

// Delete removes an intent (a definite answer, or a resolution).
func (j *Journal) Delete(id string) error {
	return j.locked(func() error {
		err := os.Remove(j.path(id))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return syncDir(filepath.Join(j.dir, "intents"))
	})
}

// Newest returns the id of the newest delivery written to agent through
// plugin ("" when none was).
func (j *Journal) Newest(plugin, agent string) (string, error) {
	b, err := os.ReadFile(filepath.Join(j.dir, "agents", agentMarker(plugin, agent)))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return string(b), err
}

// locked runs fn under the journal's write lock.
func (j *Journal) locked(fn func() error) error {
	f, err := os.OpenFile(filepath.Join(j.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return fn()
}

// hold takes the intent's own lock without waiting: ErrBusy when an
// Effect or a Resolve (in this process or another) holds it. The lock
// dies with its process.
func (j *Journal) hold(id string) (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(j.dir, "locks", id+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrBusy
		}
		return nil, err
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

// atomicWrite replaces path with b: a temp file, fsync, rename, fsync of
// the directory.
func atomicWrite(path string, b []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// pidAlive tells whether process pid exists (a zombie counts: not reaped).
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
