package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var fakeBin string

func TestMain(m *testing.M) {
	testscript.Main(wrap{m}, map[string]func(){"mu-plugin-contract": main})
}

// wrap builds mu-plugin-fake once before the scripts run.
type wrap struct{ m *testing.M }

func (w wrap) Run() int {
	dir, err := os.MkdirTemp("", "contract-cmd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	fakeBin = filepath.Join(dir, "mu-plugin-fake")
	if out, err := exec.Command("go", "build", "-o", fakeBin, "../mu-plugin-fake").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building mu-plugin-fake: %v\n%s", err, out)
		return 1
	}
	_ = os.Chmod(fakeBin, 0o755)
	return w.m.Run()
}

// TestScripts runs the command's transcripts in testdata/*.txtar: $FAKE is
// mu-plugin-fake.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(e *testscript.Env) error {
			e.Setenv("FAKE", fakeBin)
			return nil
		},
	})
}
