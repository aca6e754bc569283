//go:build integration

package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/contract"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
)

// runContract runs the whole contract suite and fails on any FAIL and on
// a SKIP not in skipsOK; it returns the report.
func runContract(t *testing.T, opts contract.Options, skipsOK map[string]bool) *contract.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var out strings.Builder
	opts.Out = &out
	rep, err := contract.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	drive.Verdicts(t, rep, opts.Argv[0], func(check string) bool {
		return skipsOK[check] || skipsOK[strings.SplitN(check, "/", 2)[0]+"/"]
	}, "secrets/canary")
	t.Logf("the contract suite against %s: %s in %s", opts.Argv[0], rep.Summary(), rep.Elapsed.Round(time.Millisecond))
	return rep
}

// TestContractSSHThroughBastion: the whole suite against mu-plugin-ssh on
// host-b, reached only through the bastion, its jobs running the test
// agent there (a compose host: the test image's tmux, the user mu).
func TestContractSSHThroughBastion(t *testing.T) {
	e := getEnv(t)
	rep := runContract(t, contract.Options{Argv: e.sshPlugin().argv, Host: "host-b", JobCmd: string(agent.Script)},
		map[string]bool{"host/": true, "job/dedupe": true, "channel/steer": true})
	for _, name := range []string{"link/exec-timeout-remote", "link/fetch", "link/push", "link/check-steps", "process/eof-exit",
		"job/start", "job/fence", "job/stop", "channel/send", "channel/receipt", "channel/watch", "channel/interrupt"} {
		if r, ok := rep.Get(name); !ok || r.Status != contract.Pass {
			t.Errorf("%s did not pass: %+v", name, r)
		}
	}
}

// TestContractDocker: the whole suite against mu-plugin-docker on this
// Engine, with --param (ttl, cpus, memory) and jobs running the test agent.
func TestContractDocker(t *testing.T) {
	e := getEnv(t)
	rep := runContract(t, contract.Options{Argv: e.dockerPlugin().argv,
		Params: map[string]string{"ttl": "1h", "cpus": "1", "memory": "256m"},
		JobCmd: string(agent.Script)},
		map[string]bool{"host/dedupe": true, "job/dedupe": true, "channel/steer": true})
	for _, name := range []string{"host/acquire", "host/fence", "job/start", "job/stop", "channel/send", "channel/receipt", "channel/watch", "link/fetch", "link/push"} {
		if r, ok := rep.Get(name); !ok || r.Status != contract.Pass {
			t.Errorf("%s did not pass: %+v", name, r)
		}
	}
}
