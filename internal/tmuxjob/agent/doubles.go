package agent

import (
	"context"
	"embed"
	"fmt"

	"github.com/mu-org/mu-plugins/internal/tmuxjob"
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

// doubleParts are the files each double is made of, in order.
var doubleParts = map[string][]string{
	"claude": {"lib.sh", "claude-tui.sh", "claude.sh"},
	"codex":  {"lib.sh", "codex.sh"},
}

// Double is the program of the named CLI's double; nil for a CLI without
// one.
func Double(name string) []byte {
	parts, ok := doubleParts[name]
	if !ok {
		return nil
	}
	var b []byte
	for _, p := range parts {
		body, err := doublesFS.ReadFile("doubles/" + p)
		if err != nil {
			panic(err)
		}
		b = append(append(b, body...), '\n')
	}
	return b
}

// InstallDouble writes the named CLI's double to path on the host r
// reaches (path's base name should be the CLI's program name).
func InstallDouble(ctx context.Context, r tmuxjob.Runner, name, path string) error {
	b := Double(name)
	if b == nil {
		return fmt.Errorf("no test double of %q", name)
	}
	// As Install writes the test agent (tmuxjob.Install).
	return tmuxjob.Install(ctx, r, path, b)
}
