package docker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/backend/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/contract"
	"github.com/mu-org/mu-plugins/internal/testimage"
)

// The contract suite's job and channel checks (and its secrets canary)
// against mu-plugin-docker with each harness adapter as the agent, over
// the double of its CLI: spec.harness names the adapter, and spec.cmd runs
// the double (passed whole, `sh -c DOUBLE NAME`, so no install step).
func TestContractSuiteAdapters(t *testing.T) {
	testimage.Ensure(t)
	for _, c := range []struct{ harness, cli string }{{"codex", "codex"}, {"claude-print", "claude"}, {"claude", "claude"}} {
		t.Run(c.harness, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
			defer cancel()
			var out strings.Builder
			rep, err := contract.Run(ctx, contract.Options{
				Argv: []string{binPath(t), "--prefix", newPrefix(), "--image", testimage.Name, "--label", "org.mu-plugins.test=1",
					"--label", "org.mu-plugins.testrun=" + runID},
				Params:     map[string]string{"ttl": "1h"},
				Run:        `^(job|channel|secrets)/`,
				JobHarness: c.harness,
				JobCmd:     "sh -c " + shQuote(string(agent.Double(c.cli))) + " " + c.cli,
				Out:        &out,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cleanupRun)
			// Print mode has no dialogs: channel/answer skips (nothing to answer).
			skipsOK := map[string]bool{"job/dedupe": true, "channel/steer": true, "channel/answer": c.harness != "claude"}
			for _, r := range rep.Results {
				switch {
				case r.Status == contract.Fail:
					t.Errorf("FAIL %s: %s\n%s", r.Name, r.Reason, strings.Join(r.Wire, "\n"))
				case r.Status == contract.Skip && !skipsOK[r.Name]:
					t.Errorf("SKIP %s: %s", r.Name, r.Reason)
				}
			}
			for _, name := range []string{"job/start", "job/stop", "channel/send", "channel/receipt", "channel/watch", "channel/runs-dense",
				"channel/fresh", "channel/command", "channel/interrupt", "channel/abort", "secrets/canary"} {
				if r, ok := rep.Get(name); !ok || r.Status != contract.Pass {
					t.Errorf("%s did not pass: %+v", name, r)
				}
			}
			t.Logf("the suite's job and channel checks, %s adapter: %s in %s", c.harness, rep.Summary(), rep.Elapsed.Round(time.Millisecond))
		})
	}
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
