package main

import (
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mu-org/mu-plugins/internal/testutil/programs"
)

func TestMain(m *testing.M) {
	programs.Main(m, map[string]func(){"mu-plugin-contract": main})
}

// TestScripts runs the command's transcripts in testdata/*.txtar: $FAKE is
// mu-plugin-fake.
func TestScripts(t *testing.T) {
	fake := programs.Build(t, "github.com/mu-org/mu-plugins/cmd/mu-plugin-fake")
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(e *testscript.Env) error {
			e.Setenv("FAKE", fake)
			return nil
		},
	})
}
