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

// The contract suite against mu-plugin-docker on the real Engine, every
// check: its jobs run the test agent (passed whole as spec.cmd, so no
// install step is needed), which follows the channel's harness contract.
func TestContractSuite(t *testing.T) {
	rep := runSuite(t, contract.Options{JobCmd: string(agent.Script)},
		map[string]bool{"host/dedupe": true, "job/dedupe": true, "channel/steer": true},
		"job/start", "job/stop", "channel/send", "channel/receipt", "channel/receipt-final", "channel/watch", "channel/runs-dense", "channel/answer", "channel/interrupt")
	t.Logf("the suite against mu-plugin-docker: %s in %s", rep.Summary(), rep.Elapsed.Round(time.Millisecond))
}

// runSuite runs the suite with opts against mu-plugin-docker on the test
// image (Argv, Params and Out are set here): every failure, and every skip
// not in skipsOK, fails the test, as does any of mustPass not passing.
func runSuite(t *testing.T, opts contract.Options, skipsOK map[string]bool, mustPass ...string) *contract.Report {
	t.Helper()
	testimage.Ensure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var out strings.Builder
	opts.Argv = []string{binPath(t), "--prefix", newPrefix(), "--image", testimage.Name, "--label", "org.mu-plugins.test=1",
		"--label", "org.mu-plugins.testrun=" + runID}
	opts.Params = map[string]string{"ttl": "1h"}
	opts.Out = &out
	rep, err := contract.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanupRun)
	for _, r := range rep.Results {
		switch {
		case r.Status == contract.Fail:
			t.Errorf("FAIL %s: %s\n%s", r.Name, r.Reason, strings.Join(r.Wire, "\n"))
		case r.Status == contract.Skip && !skipsOK[r.Name]:
			t.Errorf("SKIP %s: %s (it applies to mu-plugin-docker)", r.Name, r.Reason)
		}
	}
	for _, name := range mustPass {
		if r, ok := rep.Get(name); !ok || r.Status != contract.Pass {
			t.Errorf("%s did not pass: %+v", name, r)
		}
	}
	return rep
}
