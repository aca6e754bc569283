package contract

import (
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/programs"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
)

// TestSSHPlugin runs the whole suite against mu-plugin-ssh on a real sshd:
// a link with remoteOnTimeout "stopping" on a --host profile, and its
// jobs (the test agent as spec.cmd, as for mu-plugin-docker).
func TestSSHPlugin(t *testing.T) {
	t.Parallel() // its own sshd and jobs root: waits beside the others
	srv := testsshd.Start(t, testsshd.Options{})
	bin := programs.Build(t, "github.com/mu-org/mu-plugins/cmd/mu-plugin-ssh")
	rep := run(t, Options{Host: srv.Alias, Argv: []string{bin, "--config", srv.Config, "--known-hosts", srv.KnownHosts, "--identity", srv.UserKey}, JobCmd: string(agent.Script)})
	passesAll(t, rep)
	t.Logf("the suite against mu-plugin-ssh: %s in %s%s", rep.Summary(), rep.Elapsed.Round(time.Millisecond), rep.Slowest())
}
