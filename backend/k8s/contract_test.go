package k8s_test

import (
	"testing"

	"github.com/mu-org/mu-plugins/contract"
	"github.com/mu-org/mu-plugins/internal/testk8s"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
)

// The contract suite against mu-plugin-k8s on the real cluster, every
// check: its jobs run the test agent (passed whole as spec.cmd), which
// follows the channel's harness contract.
func TestContractSuite(t *testing.T) {
	c := testk8s.Ensure(t)
	sandboxtest.RunSuite(t, "mu-plugin-k8s", contract.Options{Argv: pluginArgv(t, c, sandboxtest.NewPrefix()), JobCmd: string(agent.Script)},
		map[string]bool{"host/dedupe": true, "job/dedupe": true, "channel/steer": true},
		"host/acquire", "job/start", "job/stop", "channel/send", "channel/receipt", "channel/watch", "channel/runs-dense")
}
