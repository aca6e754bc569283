package ssh

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/contract"
	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
)

// TestContractSuite runs the plugin contract suite against mu-plugin-ssh
// and a real sshd, every check: the link checks target the host
// "contract", and the job and channel checks run the test agent there
// (passed whole as spec.cmd), which follows the channel's harness contract.
func TestContractSuite(t *testing.T) {
	h := newJobHost(t, testsshd.Options{Alias: "contract"})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var out strings.Builder
	rep, err := contract.Run(ctx, contract.Options{Argv: h.argv(t), JobCmd: string(agent.Script), Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	drive.Verdicts(t, rep, "mu-plugin-ssh", func(check string) bool {
		return check == "job/dedupe" || check == "channel/steer" || strings.HasPrefix(check, "host/")
	}, "link/exec-exit-codes", "link/fetch", "job/start", "job/stop", "channel/send", "channel/receipt", "channel/watch", "channel/many-watches", "channel/runs-dense", "channel/answer", "channel/interrupt")
	t.Logf("the suite against mu-plugin-ssh: %s in %s", rep.Summary(), rep.Elapsed.Round(time.Millisecond))
}
