package agent_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mu-org/mu-plugins/backend/tmuxjob"
	"github.com/mu-org/mu-plugins/backend/tmuxjob/agent"
)

func TestInstallWritesTheScript(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a b", "mu-test-agent") // a space: the path is an argument, not spliced
	if err := agent.Install(context.Background(), tmuxjob.LocalRunner{}, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(b, agent.Script) {
		t.Fatalf("installed %d bytes (%v), want the script's %d", len(b), err, len(agent.Script))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v", fi.Mode())
	}
	// Installing again replaces it in place.
	if err := agent.Install(context.Background(), tmuxjob.LocalRunner{}, path); err != nil {
		t.Fatal(err)
	}
	// A path that cannot be written fails with a message.
	if err := agent.Install(context.Background(), tmuxjob.LocalRunner{}, "/proc/nope/agent"); err == nil {
		t.Fatal("install under /proc succeeded")
	}
}
