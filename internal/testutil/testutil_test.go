package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	Main(m, map[string]func(){
		"testutil-hello": func() { fmt.Println("hello from", os.Args[0], strings.Join(os.Args[1:], " ")) },
		"testutil-exit3": func() { os.Exit(3) },
	})
}

// A command given to Main is this test binary run under that name: it runs
// the command's function, with its arguments, and its exit status.
func TestCommand(t *testing.T) {
	out, err := exec.Command(Command(t, "testutil-hello"), "a", "b").Output()
	if err != nil || string(out) != "hello from testutil-hello a b\n" {
		t.Fatalf("testutil-hello: %q %v", out, err)
	}
	err = exec.Command(Command(t, "testutil-exit3")).Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("testutil-exit3: %v, want exit status 3", err)
	}
	// The commands are on PATH too.
	if out, err := exec.Command("testutil-hello").Output(); err != nil || !strings.HasPrefix(string(out), "hello from") {
		t.Fatalf("testutil-hello from PATH: %q %v", out, err)
	}
}

// Build builds once per test binary, BuildRace as this binary runs (-race
// or not), BuildShipped static; each file is one a plugin registration
// accepts (0755).
func TestBuild(t *testing.T) {
	var wg sync.WaitGroup
	paths := make([]string, 4)
	for i := range paths {
		wg.Go(func() { paths[i] = Build(t, "./testdata/echoargs") })
	}
	wg.Wait()
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Fatalf("built twice: %s and %s", paths[0], p)
		}
	}
	raced := BuildRace(t, "./testdata/echoargs")
	shipped := BuildShipped(t, "./testdata/echoargs")
	if raced == paths[0] || shipped == paths[0] || raced == shipped {
		t.Fatalf("one binary for two flavours: %s %s %s", paths[0], raced, shipped)
	}
	for bin, want := range map[string]string{
		paths[0]: "x norace",
		raced:    "x " + map[bool]string{true: "race", false: "norace"}[Race],
		shipped:  "x norace",
	} {
		if out, err := exec.Command(bin, "x").Output(); err != nil || string(out) != want+"\n" {
			t.Fatalf("%s: %q %v, want %q", bin, out, err, want)
		}
		if fi, err := os.Stat(bin); err != nil || fi.Mode().Perm() != 0o755 {
			t.Fatalf("%s: %v %v, want mode 0755", bin, fi.Mode(), err)
		}
	}
}

func TestPoll(t *testing.T) {
	n := 0
	if !Poll(Patience, func() bool { n++; return n == 3 }) || n != 3 {
		t.Fatalf("Poll stopped after %d calls", n)
	}
	calls := 0
	if Poll(20*time.Millisecond, func() bool { calls++; return false }) {
		t.Fatal("Poll reported a condition that never held")
	}
	if calls < 2 {
		t.Fatalf("cond called %d times in 20 ms", calls)
	}
}

// PollContext calls cond until it holds, and stops when its context
// ends.
func TestPollContext(t *testing.T) {
	n := 0
	if !PollContext(context.Background(), time.Millisecond, func() bool { n++; return n == 3 }) || n != 3 {
		t.Fatalf("PollContext stopped after %d calls", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	if PollContext(ctx, time.Millisecond, func() bool {
		if calls++; calls == 2 {
			cancel()
		}
		return false
	}) {
		t.Fatal("PollContext reported a condition that never held")
	}
	if calls != 2 {
		t.Fatalf("cond called %d times, want 2 (the context ended after the second)", calls)
	}
}

func TestLockedBuffer(t *testing.T) {
	var b LockedBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("ab"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if b.Len() != 1600 || strings.Count(b.String(), "ab") != 800 {
		t.Fatalf("lost writes: %d bytes", b.Len())
	}
}

func TestGitAliveProcs(t *testing.T) {
	dir := t.TempDir()
	Git(t, dir, "init", "-q")
	Git(t, dir, "commit", "-q", "--allow-empty", "-m", "x")
	if who := Git(t, dir, "log", "-1", "--format=%an <%ae>"); who != "t <t@localhost>" {
		t.Fatalf("author %q", who)
	}
	mark := "TESTUTIL_MARK=" + t.Name()
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), mark)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if got := Procs(func(kv string) bool { return kv == mark }); len(got) != 1 || got[0] != pid || !Alive(pid) {
		t.Fatalf("Procs %v, want [%d]", got, pid)
	}
	cmd.Process.Kill()
	if !Poll(Patience, func() bool { return !Alive(pid) }) { // a zombie until reaped
		t.Fatal("a killed, unreaped child stays alive")
	}
	cmd.Wait()
	if Alive(pid) || len(Procs(func(kv string) bool { return kv == mark })) != 0 {
		t.Fatal("a reaped child is still listed")
	}
}

// Parallel runs each index once, all of them before it returns; JSON
// marshals; LogWriter logs each write whole.
func TestParallelJSONLogWriter(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	Parallel(20, func(i int) { mu.Lock(); seen[i]++; mu.Unlock() })
	for i := range 20 {
		if seen[i] != 1 {
			t.Fatalf("index %d ran %d times (%v)", i, seen[i], seen)
		}
	}
	if len(seen) != 20 {
		t.Fatalf("indexes %v, want 0 to 19", seen)
	}
	if got := JSON(map[string]int{"a": 1}); got != `{"a":1}` {
		t.Fatalf("JSON: %s", got)
	}
	if n, err := LogWriter(t, "p: ").Write([]byte("line\n")); n != 5 || err != nil {
		t.Fatalf("LogWriter.Write: %d %v", n, err)
	}
}

// Repo makes a repository on main with one commit per content, in a
// directory it creates (a path with a space too).
func TestRepo(t *testing.T) {
	dir, rev := Repo(t, filepath.Join(t.TempDir(), "a repo"), "x", "xx", "xxx")
	if head := Git(t, dir, "rev-parse", "main"); head != rev {
		t.Fatalf("main is %s, HEAD %s", head, rev)
	}
	if log := Git(t, dir, "log", "--format=%s"); log != "c2\nc1\nc0" {
		t.Fatalf("log %q", log)
	}
	for i, want := range []string{"xxx", "xx", "x"} {
		if got := Git(t, dir, "show", fmt.Sprintf("HEAD~%d:f", i)); got != want {
			t.Errorf("HEAD~%d:f is %q, want %q", i, got, want)
		}
	}
}

// ShQuote's word is s to sh, whatever s holds.
func TestShQuote(t *testing.T) {
	for _, s := range []string{"", "plain", "it's", `a "b" $(c) \d`, "'", "''\n'"} {
		out, err := exec.Command("sh", "-c", "printf %s "+ShQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("%q: sh read %q (%v)", s, out, err)
		}
	}
}

// RandHex is n random bytes in hex, different each time.
func TestRandHex(t *testing.T) {
	a, b := RandHex(6), RandHex(6)
	if len(a) != 12 || strings.Trim(a, "0123456789abcdef") != "" || a == b {
		t.Fatalf("RandHex(6): %q then %q", a, b)
	}
}
