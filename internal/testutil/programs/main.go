// Package programs is the one way a test gets a program to run:
//
//   - this test binary itself, as a named command (Main and Command, on
//     testscript's Main, as mvdan/sh does): a package's own test plugins
//     and mains, run under -race with the tests;
//   - a main package built once per test binary: Build (a plugin the tests
//     run against), BuildRace (the plugin under test, under -race with the
//     tests), BuildShipped (static, as `make build` ships it).
package programs

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// mainRan is set once Main runs the tests; binDir is then the directory
// testscript put the commands in.
var (
	mainRan atomic.Bool
	binDir  string
)

// Main is the TestMain of every package whose tests run a program:
//
//	func TestMain(m *testing.M) {
//		programs.Main(m, map[string]func(){"mu-plugin-t": serveT})
//	}
//
// Run under one of cmds' names (argv[0]'s basename), the test binary runs
// that function instead of the tests and exits, 0 when it returns (it may
// os.Exit itself). Otherwise it runs the tests with each name a command
// (this binary, hard-linked) in a directory first on PATH: Command gives
// its path. This is testscript's Main, as mvdan/sh uses it; under -race
// the commands run with the race detector too. Once the tests ran, Main
// removes what Build built and runs after, in order; it never returns.
func Main(m *testing.M, cmds map[string]func(), after ...func()) {
	testscript.Main(runner{m: m, after: after}, cmds)
}

type runner struct {
	m     *testing.M
	after []func()
}

func (r runner) Run() int {
	binDir = filepath.SplitList(os.Getenv("PATH"))[0] // testscript's, put first
	mainRan.Store(true)
	defer removeBuilt()
	code := r.m.Run()
	for _, f := range r.after {
		f()
	}
	return code
}

// Command returns the absolute path of name, one of the commands the
// package's TestMain gave Main: this test binary, run as name.
func Command(t testing.TB, name string) string {
	t.Helper()
	if !mainRan.Load() {
		t.Fatalf("programs.Command(%q): the package's TestMain must be programs.Main", name)
	}
	p := filepath.Join(binDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("programs.Command(%q): not one of the commands given to programs.Main: %v", name, err)
	}
	return p
}
