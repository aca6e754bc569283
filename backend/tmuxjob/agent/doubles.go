package agent

import (
	"context"
	"embed"
	"fmt"

	"github.com/mu-org/mu-plugins/backend/tmuxjob"
)

// The test doubles of the agent CLIs tmuxjob's adapters wire
// (docs/harness.md "Test doubles"): each a POSIX sh program that
// implements the CLI's published interface the adapter uses, with a
// scripted agent behind it.
//
//go:embed doubles/*.sh
var doublesFS embed.FS

// DoubleNames are the CLIs with a double: the program names they stand for.
var DoubleNames = []string{"claude", "codex"}

// Double is the program of the named CLI's double (its shared part, then
// its own); nil for a CLI without one.
func Double(name string) []byte {
	lib, err := doublesFS.ReadFile("doubles/lib.sh")
	if err != nil {
		panic(err)
	}
	body, err := doublesFS.ReadFile("doubles/" + name + ".sh")
	if err != nil {
		return nil
	}
	return append(append(lib, '\n'), body...)
}

// InstallDouble writes the named CLI's double to path on the host r
// reaches (path's base name should be the CLI's program name).
func InstallDouble(ctx context.Context, r tmuxjob.Runner, name, path string) error {
	b := Double(name)
	if b == nil {
		return fmt.Errorf("no test double of %q", name)
	}
	return install(ctx, r, path, b, "the "+name+" double")
}
