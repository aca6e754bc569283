// Package agent ships mu-test-agent, a scripted POSIX sh agent that follows
// the harness contract (docs/harness.md), and installs it on a host.
package agent

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/mu-org/mu-plugins/backend/tmuxjob"
)

// Script is mu-test-agent.sh.
//
//go:embed mu-test-agent.sh
var Script []byte

// installScript writes stdin to $1 (creating its directory), mode 0755.
//
//go:embed scripts/install.sh
var installScript string

// Install writes the agent to path on the host r reaches. A job then runs
// it with spec.cmd `sh PATH` (quoted).
func Install(ctx context.Context, r tmuxjob.Runner, path string) error {
	_, stderr, code, err := r.Run(ctx, []string{"/bin/sh", "-c", installScript, "mu-install", path}, Script)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("install the test agent at %s: exit %d: %s", path, code, stderr)
	}
	return nil
}
