package k8s_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/backend/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/contract"
	"github.com/mu-org/mu-plugins/internal/testk8s"
)

// The contract suite against mu-plugin-k8s on the real cluster, every
// check: its jobs run the test agent (passed whole as spec.cmd), which
// follows the channel's harness contract.
func TestContractSuite(t *testing.T) {
	c := testk8s.Ensure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var out strings.Builder
	rep, err := contract.Run(ctx, contract.Options{
		Argv:   pluginArgv(t, c, newPrefix()),
		Params: map[string]string{"ttl": "1h"},
		JobCmd: string(agent.Script),
		Out:    &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	skipsOK := map[string]bool{"host/dedupe": true, "job/dedupe": true, "channel/steer": true}
	for _, r := range rep.Results {
		switch {
		case r.Status == contract.Fail:
			t.Errorf("FAIL %s: %s\n%s", r.Name, r.Reason, strings.Join(r.Wire, "\n"))
		case r.Status == contract.Skip && !skipsOK[r.Name]:
			t.Errorf("SKIP %s: %s (it applies to mu-plugin-k8s)", r.Name, r.Reason)
		}
	}
	for _, name := range []string{"host/acquire", "job/start", "job/stop", "channel/send", "channel/receipt", "channel/watch", "channel/runs-dense"} {
		if r, ok := rep.Get(name); !ok || r.Status != contract.Pass {
			t.Errorf("%s did not pass: %+v", name, r)
		}
	}
	t.Logf("the suite against mu-plugin-k8s: %s in %s", rep.Summary(), rep.Elapsed.Round(time.Millisecond))
}
