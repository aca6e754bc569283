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
	testimage.Ensure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var out strings.Builder
	rep, err := contract.Run(ctx, contract.Options{
		Argv: []string{binPath(t), "--prefix", newPrefix(), "--image", testimage.Name, "--label", "org.mu-plugins.test=1",
			"--label", "org.mu-plugins.testrun=" + runID},
		Params: map[string]string{"ttl": "1h"},
		JobCmd: string(agent.Script),
		Out:    &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanupRun)
	skipsOK := map[string]bool{"host/dedupe": true, "job/dedupe": true, "channel/steer": true}
	for _, r := range rep.Results {
		switch {
		case r.Status == contract.Fail:
			t.Errorf("FAIL %s: %s\n%s", r.Name, r.Reason, strings.Join(r.Wire, "\n"))
		case r.Status == contract.Skip && !skipsOK[r.Name]:
			t.Errorf("SKIP %s: %s (it applies to mu-plugin-docker)", r.Name, r.Reason)
		}
	}
	for _, name := range []string{"job/start", "job/stop", "channel/send", "channel/receipt", "channel/receipt-final", "channel/watch", "channel/runs-dense", "channel/answer", "channel/interrupt"} {
		if r, ok := rep.Get(name); !ok || r.Status != contract.Pass {
			t.Errorf("%s did not pass: %+v", name, r)
		}
	}
	t.Logf("the suite against mu-plugin-docker: %s in %s", rep.Summary(), rep.Elapsed.Round(time.Millisecond))
}
