package docker_test

import (
	"testing"

	"github.com/mu-org/mu-plugins/contract"
	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
)

// The contract suite against mu-plugin-docker on the real Engine, every
// check: its jobs run the test agent (passed whole as spec.cmd, so no
// install step is needed), which follows the channel's harness contract.
func TestContractSuite(t *testing.T) {
	t.Parallel() // its own prefix: waits beside the adapters' suites
	runSuite(t, contract.Options{JobCmd: string(agent.Script)},
		map[string]bool{"host/dedupe": true, "job/dedupe": true, "channel/steer": true},
		"job/start", "job/stop", "channel/send", "channel/receipt", "channel/receipt-final", "channel/watch", "channel/runs-dense", "channel/answer", "channel/interrupt")
}

// runSuite runs the suite with opts against mu-plugin-docker on the test
// image (Argv set here; sandboxtest.RunSuite sets Params and Out): every
// failure, and every skip not in skipsOK, fails the test, as does any of
// mustPass not passing.
func runSuite(t *testing.T, opts contract.Options, skipsOK map[string]bool, mustPass ...string) *contract.Report {
	t.Helper()
	testimage.Ensure(t)
	prefix := sandboxtest.NewPrefix()
	opts.Argv = []string{binPath(t), "--prefix", prefix, "--image", testimage.Name, "--label", "org.mu-plugins.test=1",
		"--label", "org.mu-plugins.testrun=" + runID}
	// Its own containers only: other suites may run beside it (TestMain's
	// cleanupRun takes what is left).
	t.Cleanup(func() { removeNamed(prefix + "-") })
	return sandboxtest.RunSuite(t, "mu-plugin-docker", opts, skipsOK, mustPass...)
}
