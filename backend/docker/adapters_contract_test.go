package docker_test

import (
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/contract"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
)

// The contract suite's job and channel checks (and its secrets canary)
// against mu-plugin-docker with each harness adapter as the agent, over
// the double of its CLI: spec.harness names the adapter, and spec.cmd runs
// the double (passed whole, `sh -c DOUBLE NAME`, so no install step).
func TestContractSuiteAdapters(t *testing.T) {
	t.Parallel() // each suite its own prefix: they wait side by side
	for _, c := range []struct{ harness, cli string }{{"codex", "codex"}, {"claude-print", "claude"}, {"claude", "claude"}} {
		t.Run(c.harness, func(t *testing.T) {
			t.Parallel()
			// Print mode has no dialogs: channel/answer skips (nothing to answer).
			skipsOK := map[string]bool{"job/dedupe": true, "channel/steer": true, "channel/answer": c.harness != "claude"}
			rep := runSuite(t, contract.Options{Run: `^(job|channel|secrets)/`, JobHarness: c.harness,
				JobCmd: "sh -c " + words.ShQuote(string(agent.Double(c.cli))) + " " + c.cli}, skipsOK,
				"job/start", "job/stop", "channel/send", "channel/receipt", "channel/watch", "channel/runs-dense",
				"channel/fresh", "channel/command", "channel/interrupt", "channel/abort", "secrets/canary")
			t.Logf("the suite's job and channel checks, %s adapter: %s in %s", c.harness, rep.Summary(), rep.Elapsed.Round(time.Millisecond))
		})
	}
}
