package agent_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
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

func TestInstallDoubles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range agent.DoubleNames {
		path := filepath.Join(dir, "bin", n)
		if err := agent.InstallDouble(context.Background(), tmuxjob.LocalRunner{}, n, path); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(b, agent.Double(n)) || !bytes.HasPrefix(b, []byte("#!/bin/sh")) {
			t.Fatalf("%s: installed %d bytes (%v), want the double's %d", n, len(b), err, len(agent.Double(n)))
		}
	}
	if agent.Double("gemini") != nil {
		t.Error("a double of a CLI without one")
	}
	if err := agent.InstallDouble(context.Background(), tmuxjob.LocalRunner{}, "gemini", filepath.Join(dir, "gemini")); err == nil {
		t.Error("installed a double that does not exist")
	}
}
