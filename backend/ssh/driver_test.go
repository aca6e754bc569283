package ssh

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/programs"
	"github.com/mu-org/mu-plugins/internal/testutil/testlog"
	"github.com/mu-org/mu-plugins/internal/testutil/tier"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The tests drive mu-plugin-ssh through caller (testutil/drive): served in
// this test binary (inproc: race-detector coverage, and unexported knobs
// such as watchdogSlack and the Backend itself), or the built binary run as
// mu runs it (subproc).

func TestMain(m *testing.M) {
	os.Unsetenv("SSH_AUTH_SOCK")
	tier.Main(m, "ssh", nil)
}

// pluginBin is the built mu-plugin-ssh, built once.
func pluginBin(t testing.TB) string {
	t.Helper()
	return programs.Build(t, "github.com/mu-org/mu-plugins/cmd/mu-plugin-ssh")
}

// driver is mu-plugin-ssh as a test drives it: one attempt a call, and
// the params it sends are not checked against the schema (the plugin's
// own checks are under test).
type driver struct {
	*drive.Plugin
	t testing.TB
}

// base is every call's target: the host named host (the caller sets the
// deadline at each send).
func base(host string) protocol.Base {
	return protocol.Base{Target: protocol.Target{Host: protocol.HostRef{Name: host}}}
}

func execParams(host, script, cwd string, timeout time.Duration) protocol.ExecParams {
	return protocol.ExecParams{Base: base(host), Script: script, Cwd: cwd, TimeoutMs: timeout.Milliseconds()}
}

// link runs link.exec, link.fetch or link.push and returns its result or
// its error reply.
func link[P any](d *driver, m protocol.Method[P, protocol.ExecResult], params P) (protocol.ExecResult, *caller.RemoteError) {
	d.t.Helper()
	return drive.Try(d.t, d.Plugin, m, params)
}

func (d *driver) exec(host, script, cwd string, timeout time.Duration) (protocol.ExecResult, *caller.RemoteError) {
	d.t.Helper()
	return link(d, protocol.MethodLinkExec, execParams(host, script, cwd, timeout))
}

// mustExec runs a script that must succeed with exit 0.
func (d *driver) mustExec(host, script string) string {
	d.t.Helper()
	res, r := d.exec(host, script, ".", 60*time.Second)
	if r != nil {
		d.t.Fatalf("exec %q: %s (%s) remedy %s", script, r.Message, r.Kind, r.Remedy)
	}
	if res.ExitCode == nil || *res.ExitCode != 0 {
		d.t.Fatalf("exec %q: exit %v stderr %q", script, fmtExit(res.ExitCode), res.Stderr)
	}
	return res.Stdout
}

func fmtExit(p *int) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// local is a Backend on cfg served in this process (caller.Config.Local),
// as mu would start it; a stop waits 30 s for its Serve to return.
func local(t testing.TB, cfg Config) (caller.Config, *Backend) {
	t.Helper()
	if cfg.ShimExe == "" {
		cfg.ShimExe = pluginBin(t)
	}
	b := New(cfg, testlog.Logger(t))
	opts := b.Options()
	opts.Name, opts.Version = "ssh", "test"
	opts.Logger = testlog.Logger(t)
	return caller.Config{Name: "ssh", Local: &opts, SkipParamsCheck: true, Retries: -1, StopGrace: 30 * time.Second}, b
}

// inproc serves a Backend in-process and drives it, until the test ends.
func inproc(t testing.TB, cfg Config) (*driver, *Backend) {
	t.Helper()
	c, b := local(t, cfg)
	p := drive.Start(t, c)
	t.Cleanup(func() {
		switch rep := p.Stop(); {
		case !rep.GroupEmpty:
			t.Errorf("Serve did not return within 30 s of stdin EOF")
		case rep.Exit != nil:
			t.Errorf("Serve: %v", rep.Exit)
		}
	})
	return &driver{Plugin: p, t: t}, b
}

// onBox is the plugin served in-process with a fresh sshd as host "box".
func onBox(t testing.TB) *driver {
	t.Helper()
	_, cfg := server(t, testsshd.Options{})
	d, _ := inproc(t, cfg)
	return d
}

// subproc runs the built binary with args; env adds to its environment. A
// stop gives it 15 s to exit.
func subproc(t testing.TB, env []string, args ...string) *driver {
	t.Helper()
	p := drive.Start(t, caller.Config{Name: "ssh", Argv: append([]string{pluginBin(t)}, args...), Env: env,
		SkipParamsCheck: true, Retries: -1, StopGrace: 15 * time.Second})
	t.Cleanup(func() {
		if rep := p.Stop(); rep.LeaderKilled() {
			t.Errorf("plugin did not exit within 15 s of stdin EOF: %+v", rep)
		}
	})
	return &driver{Plugin: p, t: t}
}

// server starts an sshd and returns it with a Config pointing at it.
func server(t testing.TB, o testsshd.Options) (*testsshd.Server, Config) {
	t.Helper()
	s := testsshd.Start(t, o)
	return s, Config{SSHConfig: s.Config}
}

// remoteLeft lists the non-zombie processes on the host whose command line
// contains marker, read with ps over a fresh OpenSSH session.
func remoteLeft(t testing.TB, s *testsshd.Server, marker string) []string {
	t.Helper()
	out := s.SSH(t, "ps -eo stat=,args=")
	var left []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || strings.HasPrefix(f[0], "Z") || !strings.Contains(l, marker) || strings.Contains(l, "ps -eo") {
			continue
		}
		left = append(left, strings.TrimSpace(l))
	}
	return left
}

// runUntilStopped runs a script in the background, for a test that stops
// the plugin under it; its answer does not matter.
func (d *driver) runUntilStopped(host, script string, timeout time.Duration) {
	go d.Exec(context.Background(), protocol.Target{Host: protocol.HostRef{Name: host}}, script, ".", timeout)
}
