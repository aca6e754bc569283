package docker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/backend/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
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
		Argv: []string{binPath(t), "--prefix", newPrefix(), "--image", testimage.Name, "--label", "org.mu-plugins.test=1",
			"--label", "org.mu-plugins.testrun=" + runID},
		Need:   []string{"host", "link", "job", "channel"},
		Stderr: testutil.LogWriter(t, "plugin stderr: "),
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
	key := "spawn-" + newPrefix()
	res, err := p.HostAcquire(ctx, protocol.AcquireParams{Base: protocol.Base{Target: protocol.Target{Host: protocol.HostRef{Name: "box"}}},
		Key: key, Params: map[string]string{"ttl": "1h"}})
	if err != nil {
		t.Fatalf("host.acquire: %v", err)
	}
	t.Cleanup(func() {
		_ = p.HostRelease(context.Background(), protocol.KeyParams{Base: protocol.Base{Target: protocol.Target{Host: protocol.HostRef{Name: "box"}}}, Key: key})
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

// localTmux is a tmux server of the test's own on this machine: mu's panes.
type localTmux struct{ sock string }

func newLocalTmux(t *testing.T) *localTmux {
	dir, err := os.MkdirTemp("", "mu-tmux")
	if err != nil {
		t.Fatal(err)
	}
	l := &localTmux{sock: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", l.sock, "kill-server").Run()
		os.RemoveAll(dir)
	})
	return l
}

func (l *localTmux) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", l.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// openView runs a view in a pane of its own, as mu does: its command under
// sh with its env, stdin from /dev/null.
func (l *localTmux) openView(t *testing.T, name string, v protocol.View) {
	t.Helper()
	args := []string{"new-session", "-d", "-s", name, "-x", "160", "-y", "48"}
	keys := make([]string, 0, len(v.Env))
	for k := range v.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-e", k+"="+v.Env[k])
	}
	// The pane stays after the view exits, saying how it exited.
	args = append(args, "--", "/bin/sh", "-c", "(exec </dev/null; "+v.Command+`); echo "[the view exited: $?]"; exec sleep 3600`)
	l.run(t, args...)
}

// shows waits until the pane shows want.
func (l *localTmux) shows(t *testing.T, name, want string) {
	t.Helper()
	var got string
	if !testutil.Poll(testutil.Patience, func() bool {
		got = l.run(t, "capture-pane", "-p", "-J", "-S", "-200", "-t", "="+name+":")
		return strings.Contains(got, want)
	}) {
		t.Fatalf("the view %s never showed %q; it shows:\n%s", name, want, got)
	}
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
