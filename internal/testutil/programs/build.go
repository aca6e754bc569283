package programs

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
)

// built holds what Build built, once per test binary.
var built struct {
	sync.Mutex
	dir  string
	bins map[string]*binary
}

type binary struct {
	once sync.Once
	path string
	err  error
}

// How a binary is built.
type flavour int

const (
	plain   flavour = iota // go build
	race                   // with -race when this test binary has it
	shipped                // as `make build` ships it
)

// Build builds the main package pkg (an import path, or a directory
// relative to the test's package) once per test binary and returns the
// binary's absolute path, named as pkg's last element: a plugin the tests
// run as mu would. It needs programs.Main as the package's TestMain, which
// removes the binaries once the tests ran.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	return build(t, pkg, plain)
}

// BuildRace is Build with -race when this test binary runs with the race
// detector: for the tests of the plugin pkg itself, so that it runs under
// the detector too (slower: a plugin the tests only run against is
// Build's).
func BuildRace(t testing.TB, pkg string) string {
	t.Helper()
	return build(t, pkg, race)
}

// BuildShipped is Build for a binary as `make build` ships it: static
// (CGO_ENABLED=0), -trimpath, never with the race detector.
func BuildShipped(t testing.TB, pkg string) string {
	t.Helper()
	return build(t, pkg, shipped)
}

func build(t testing.TB, pkg string, how flavour) string {
	t.Helper()
	if !mainRan.Load() {
		t.Fatalf("programs.Build(%q): the package's TestMain must be programs.Main (it removes what was built)", pkg)
	}
	key := fmt.Sprint(how, " ", pkg)
	built.Lock()
	if built.bins == nil {
		built.bins = map[string]*binary{}
	}
	b := built.bins[key]
	if b == nil {
		b = &binary{}
		built.bins[key] = b
	}
	built.Unlock()
	b.once.Do(func() { b.path, b.err = goBuild(pkg, how) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// buildBase is where the builds go: the temporary directory as the test
// binary started. A test that sets TMPDIR (t.Setenv, to check what a
// plugin leaves there) must not have the package's first build land in
// it: that directory goes when the test ends, and the build with it.
var buildBase = os.TempDir()

func goBuild(pkg string, how flavour) (string, error) {
	built.Lock()
	if built.dir == "" {
		d, err := os.MkdirTemp(buildBase, "mu-testbin-")
		if err != nil {
			built.Unlock()
			return "", err
		}
		built.dir = d
	}
	root := built.dir
	built.Unlock()
	dir, err := os.MkdirTemp(root, "")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, path.Base(filepath.ToSlash(pkg)))
	args := []string{"build", "-o", out}
	env := os.Environ()
	switch {
	case how == shipped:
		args = append(args, "-trimpath")
		env = append(env, "CGO_ENABLED=0")
	case how == race && Race:
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Env = env
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
	}
	// A plugin's registration refuses a file its group or the world can
	// write, whatever the umask made it.
	if err := os.Chmod(out, 0o755); err != nil {
		return "", err
	}
	return out, nil
}

func removeBuilt() {
	built.Lock()
	defer built.Unlock()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}
