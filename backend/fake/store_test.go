package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
