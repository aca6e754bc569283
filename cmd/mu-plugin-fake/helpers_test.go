package main

import (
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/programs"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The test binary is the plugin: run as mu-plugin-fake (programs.Main) it
// runs main instead of the tests, so the plugin runs under -race too.
func TestMain(m *testing.M) {
	programs.Main(m, map[string]func(){"mu-plugin-fake": main})
}

const canary = "canary-7f3e9a1c55d2"

// markEnv is in every plugin's environment, with the canary: neither may
// reach a script.
const markEnv = "MU_FAKE_TEST_ENV"

// plugin is the absolute path of mu-plugin-fake: this test binary.
func plugin(t testing.TB) string { return programs.Command(t, "mu-plugin-fake") }

func start(t testing.TB, args ...string) *drive.Plugin {
	t.Helper()
	p := drive.Start(t, caller.Config{
		Name:    "fake",
		Argv:    append([]string{plugin(t)}, args...),
		Env:     []string{markEnv + "=1", "MU_PLUGIN_CANARY=" + canary},
		Retries: -1,
	})
	p.Budget = 30 * time.Second
	t.Cleanup(func() {
		p.Stop()
		if len(p.Wire.Containing(caller.In, canary)) > 0 || len(p.Wire.Containing(caller.Out, canary)) > 0 {
			t.Errorf("the canary appeared on the wire")
		}
	})
	return p
}

func agentTarget(hostName, ws, name, jobKey, handle string) protocol.Target {
	return protocol.Target{
		Host:  protocol.HostRef{Name: hostName},
		Agent: &protocol.AgentRef{Workstream: ws, Name: name, Incarnation: 1},
		Job:   &protocol.JobRef{Kind: "fake", Key: jobKey, Handle: handle},
	}
}

func spec(ws, name string) protocol.JobSpec {
	return protocol.JobSpec{Workstream: ws, Name: name, Harness: "pi", Role: "full-access", Cmd: "pi --mode rpc",
		CommandSource: "harness", Cwd: ".", Env: map[string]string{"SECRET_TOKEN": "s3cr3t"}}
}
