package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Two stores on one directory (as two invocations) and many writers: every
// increment lands, and the file is always whole JSON.
func TestFileStoreSerialisesWriters(t *testing.T) {
	dir := t.TempDir()
	s1, err := newFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := newFileStore(dir)
	ctx := context.Background()
	var wg sync.WaitGroup
	const n = 40
	for i := 0; i < n; i++ {
		for _, s := range []Store{s1, s2} {
			wg.Add(1)
			go func(s Store, i int) {
				defer wg.Done()
				err := s.Do(ctx, true, func(w *World) error {
					w.next()
					w.Hosts[fmt.Sprintf("k%d-%p", i, s)] = &Host{State: stateUp}
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}(s, i)
		}
	}
	wg.Wait()
	b, err := os.ReadFile(filepath.Join(dir, "world.json"))
	if err != nil {
		t.Fatal(err)
	}
	var w World
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("world.json is not whole JSON: %v", err)
	}
	if w.Seq != 2*n || len(w.Hosts) != 2*n {
		t.Fatalf("seq=%d hosts=%d, want %d each: an effect was lost", w.Seq, len(w.Hosts), 2*n)
	}
}

func TestStoreDropsAFailedChange(t *testing.T) {
	for name, s := range map[string]Store{"mem": newMemStore(), "file": must(newFileStore(t.TempDir()))} {
		ctx := context.Background()
		_ = s.Do(ctx, true, func(w *World) error { w.next(); return nil })
		err := s.Do(ctx, true, func(w *World) error { w.next(); return fmt.Errorf("no") })
		if err == nil {
			t.Fatalf("%s: the error was lost", name)
		}
		_ = s.Do(ctx, false, func(w *World) error {
			if w.Seq != 1 {
				t.Errorf("%s: seq=%d, want 1: a failed change was kept", name, w.Seq)
			}
			return nil
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestParamsHashIgnoresDeadlineOnly(t *testing.T) {
	a, _ := paramsHash([]byte(`{"deadline":1,"key":"k","params":{"b":"2","a":"1"}}`))
	b, _ := paramsHash([]byte(`{"params":{"a":"1","b":"2"},"key":"k","deadline":99}`))
	c, _ := paramsHash([]byte(`{"params":{"a":"1","b":"3"},"key":"k","deadline":1}`))
	if a != b {
		t.Fatal("a resend that differs only in deadline (and key order) hashed differently")
	}
	if a == c {
		t.Fatal("different params hashed the same")
	}
}

// --state refuses a directory that group or world can write (another user
// could replace the world), and creates a missing one 0700.
func TestStateDirWritableByOthersIsRefused(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o770, 0o703, 0o1777} {
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := newFileStore(dir); err == nil || !strings.Contains(err.Error(), "chmod 700") {
			t.Errorf("mode %v: %v, want a refusal naming the remedy", mode, err)
		}
	}
	fresh := filepath.Join(t.TempDir(), "a", "state")
	if _, err := newFileStore(fresh); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(fresh); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("a new state directory: %v %v, want 0700", st.Mode(), err)
	}
	ok := t.TempDir()
	os.Chmod(ok, 0o750)
	if _, err := newFileStore(ok); err != nil {
		t.Fatalf("a directory only its owner can write: %v", err)
	}
}

// The world is written through a temporary file made with O_EXCL: a
// symlink planted where the temp file goes is never followed, and neither
// is one planted as the lock.
func TestWorldWriteFollowsNoPlantedSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Where the temp file used to go (a fixed name per pid).
	if err := os.Symlink(victim, filepath.Join(dir, ".world.json.tmp-"+strconv.Itoa(os.Getpid()))); err != nil {
		t.Fatal(err)
	}
	s, err := newFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Do(context.Background(), true, func(w *World) error { w.next(); return nil }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("the world was written through a planted symlink: the victim holds %q", b)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "world.json")); err != nil || !strings.Contains(string(b), `"seq": 1`) {
		t.Fatalf("world.json: %v %s", err, b)
	}
	lockDir := t.TempDir()
	if err := os.Symlink(victim, filepath.Join(lockDir, "lock")); err != nil {
		t.Fatal(err)
	}
	ls, _ := newFileStore(lockDir)
	if err := ls.Do(context.Background(), false, func(w *World) error { return nil }); err == nil {
		t.Fatal("a lock planted as a symlink was followed")
	}
}
