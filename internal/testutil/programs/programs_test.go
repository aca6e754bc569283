package programs

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
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
