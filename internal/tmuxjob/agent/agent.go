// Package agent ships mu-test-agent, a scripted POSIX sh agent that follows
// the harness contract (docs/harness.md), and installs it on a host.
package agent

import (
	"context"
	_ "embed"

	"github.com/mu-org/mu-plugins/internal/tmuxjob"
)

// Script is mu-test-agent.sh.
//
//go:embed mu-test-agent.sh
var Script []byte

// Install writes the agent to path on the host r reaches (tmuxjob.Install:
// over the Runner's Files when it has them). A job then runs it with
// spec.cmd `sh PATH` (quoted).
func Install(ctx context.Context, r tmuxjob.Runner, path string) error {
	return tmuxjob.Install(ctx, r, path, Script)
}
