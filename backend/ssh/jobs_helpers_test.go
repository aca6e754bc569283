package ssh

import (
	"context"
	"path"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// jobHost is a testsshd host with a jobs root of the test's own (under the
// test user's home: --jobs-root, relative) and the test agent installed.
type jobHost struct {
	s     *testsshd.Server
	root  string // --jobs-root, relative to the login directory
	agent string // the test agent's absolute path on the host
}

func newJobHost(t testing.TB, o testsshd.Options) *jobHost {
	t.Helper()
	s := testsshd.Start(t, o)
	h := &jobHost{s: s, root: "mu-jobs-test-" + words.RandHex(6)}
	h.agent = path.Join(s.Home, h.root, "bin", "mu-test-agent")
	t.Cleanup(func() { h.cleanup(t) })
	b := New(Config{SSHConfig: s.Config}, nil)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := agent.Install(ctx, b.Runner(s.Alias), h.agent); err != nil {
		t.Fatalf("installing the test agent: %v", err)
	}
	return h
}

// cleanup kills the jobs' tmux server and removes the jobs root.
func (h *jobHost) cleanup(t testing.TB) {
	dir := path.Join(h.s.Home, h.root)
	b := New(Config{SSHConfig: h.s.Config}, nil)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, _, err := b.Runner(h.s.Alias).Run(ctx, []string{"/bin/sh", "-c", `tmux -S "$1/tmux.sock" kill-server 2>/dev/null; rm -rf "$1"`, "sh", dir}, nil)
	if err != nil {
		t.Logf("cleaning up the jobs root: %v", err)
	}
}

// argv is the plugin's registered argv for this host.
func (h *jobHost) argv(t testing.TB, extra ...string) []string {
	return append([]string{pluginBin(t), "--config", h.s.Config, "--jobs-root", h.root}, extra...)
}

// start starts the built plugin on this host as mu does.
func (h *jobHost) start(t testing.TB) *caller.Plugin { return startJobsPlugin(t, h.s, h.root) }

// startJobsPlugin starts the built plugin as mu does, for s's hosts, with
// --jobs-root root.
func startJobsPlugin(t testing.TB, s *testsshd.Server, root string) *caller.Plugin {
	argv := []string{pluginBin(t), "--config", s.Config, "--jobs-root", root}
	return drive.Start(t, caller.Config{Name: "ssh", Argv: argv, Need: []string{"link", "job", "channel"}}).Plugin
}

// host is the target of the server's alias.
func (h *jobHost) host() protocol.Target {
	return protocol.Target{Host: protocol.HostRef{Name: h.s.Alias}}
}

// spec runs the test agent in cwd with env.
func (h *jobHost) spec(name, cwd string, env map[string]string) protocol.JobSpec {
	if env == nil {
		env = map[string]string{}
	}
	return protocol.JobSpec{Workstream: "ws", Name: name, Harness: "mu-test-agent", Role: "full-access",
		Cmd: "exec sh " + shQuote(h.agent), CommandSource: "test", Cwd: cwd, Env: env}
}

// jobTarget names a started job and its agent.
func (h *jobHost) jobTarget(key, handle, name string) protocol.Target {
	return drive.JobTarget(h.host(), JobKind, key, handle, "ws", name)
}

func newKey(prefix string) string { return prefix + "-" + words.RandHex(6) }
