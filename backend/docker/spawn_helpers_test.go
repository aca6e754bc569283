package docker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/testutil/testlog"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// agentPath is where the tests install the test agent in a container.
const agentPath = "/home/mu/bin/mu-test-agent"

// callerConfig starts the built plugin the way mu does (drive.Start:
// registration checks, its own process group, the handshake and every load
// rule), stopped with mu's stop sequence at the test's end.
func callerConfig(t testing.TB) caller.Config {
	return caller.Config{
		Name: "docker",
		Argv: []string{binPath(t), "--prefix", sandboxtest.NewPrefix(), "--image", testimage.Name, "--label", "org.mu-plugins.test=1",
			"--label", "org.mu-plugins.testrun=" + runID},
		Need:   []string{"host", "link", "job", "channel"},
		Stderr: testlog.LogWriter(t, "plugin stderr: "),
	}
}

// spawnPlugin starts the plugin as mu drives it, and a fresh host for
// spawns (spawnHost) on it.
func spawnPlugin(t testing.TB, ctx context.Context) (*caller.Plugin, protocol.Target) {
	t.Helper()
	p := drive.Start(t, callerConfig(t)).Plugin
	return p, spawnHost(t, ctx, p)
}

// spawnHost acquires a fresh host and installs the test agent in it.
func spawnHost(t testing.TB, ctx context.Context, p *caller.Plugin) protocol.Target {
	t.Helper()
	key := "spawn-" + sandboxtest.NewPrefix()
	res, err := caller.Invoke(ctx, p, protocol.MethodHostAcquire, protocol.AcquireParams{Base: protocol.Base{Target: protocol.Target{Host: protocol.HostRef{Name: "box"}}},
		Key: key, Params: map[string]string{"ttl": "1h"}})

	if err != nil {
		t.Fatalf("host.acquire: %v", err)
	}
	t.Cleanup(func() {
		_, _ = caller.Invoke(context.Background(), p, protocol.MethodHostRelease, protocol.KeyParams{Base: protocol.Base{Target: protocol.Target{Host: protocol.HostRef{Name: "box"}}}, Key: key})
	})
	host := protocol.Target{Host: protocol.HostRef{Name: "box", Handle: res.Handle, Instance: p.Declaration().Instance}}
	if err := agent.Install(ctx, inProcess(t).Runner(res.Handle), agentPath); err != nil {
		t.Fatalf("installing the test agent: %v", err)
	}
	return host
}

// jobSpec runs the test agent in cwd with env.
func jobSpec(name, cwd string, env map[string]string) protocol.JobSpec {
	if env == nil {
		env = map[string]string{}
	}
	return protocol.JobSpec{Workstream: "ws", Name: name, Harness: "mu-test-agent", Role: "full-access",
		Cmd: "exec sh " + agentPath, CommandSource: "test", Cwd: cwd, Env: env}
}

func mustExec(t testing.TB, ctx context.Context, p *caller.Plugin, host protocol.Target, script string) string {
	t.Helper()
	r, err := p.Exec(ctx, host, script, ".", 60*time.Second)
	if err != nil {
		t.Fatalf("link.exec %q: %v", script, err)
	}
	if r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("link.exec %q: exit %v: %s %s", script, r.ExitCode, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

func must[T any](t testing.TB, what string) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

var _ = fmt.Sprint
