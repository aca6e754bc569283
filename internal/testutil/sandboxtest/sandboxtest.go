// Package sandboxtest is how the tests of a sandbox provider's plugin
// (mu-plugin-docker, mu-plugin-k8s: internal/sandbox) drive it, defined
// once: a run's labels and a test's name prefix, the plugin through
// drive as mu runs it, the params of every call, a crash drill's kill
// and span (KillDuring, TimeAcquire), the local repository the link tests
// push (LocalRepo), and the checks of what the providers share (the
// link's exec, the fence, the contract suite, the benchmarks' plugin
// half), run by each provider's tests against its real hosts.
package sandboxtest

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/gitrepo"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// RunID labels one test binary's hosts (org.mu-plugins.testrun), so that
// its cleanup removes only its own.
func RunID() string { return words.RandHex(6) }

// NewPrefix gives each test its own host-name prefix.
func NewPrefix() string { return "mutest-" + words.RandHex(4) }

// Plugin is a provider's plugin as a test drives it: a drive.Plugin
// (the same fields: its caller.Plugin, stderr, wire and budget) with the
// calls the providers' tests make. The params it sends are not checked
// against the schema: the plugin's own checks are under test.
type Plugin drive.Plugin

// Start starts the plugin cfg names as mu does (the handshake included:
// one attempt a call, a handshake may take 30 s, a stop gives it 10 s to
// exit on stdin's EOF), each call's budget at least budget, and stops it
// with stdin's EOF when the test ends.
func Start(t testing.TB, cfg caller.Config, budget time.Duration) *Plugin {
	t.Helper()
	cfg.SkipParamsCheck, cfg.Retries = true, -1
	cfg.HandshakeTimeout, cfg.StopGrace = 30*time.Second, 10*time.Second
	p := (*Plugin)(drive.Start(t, cfg))
	p.Budget = budget
	t.Cleanup(func() { p.Stop(t) })
	return p
}

// Stop closes stdin, as mu's death would, and fails the test unless the
// plugin exits within 10 s (its group is killed then).
func (p *Plugin) Stop(t testing.TB) {
	if rep := p.CloseStdin(); rep.LeaderKilled() {
		t.Errorf("the plugin did not exit within 10 s of stdin EOF")
	}
}

// Driven is a *Plugin, or a type that embeds one (a provider's tests'
// own plugin): what Ask, Err, Must and Send call through.
type Driven interface{ driven() *Plugin }

func (p *Plugin) driven() *Plugin { return p }

// Ask calls m with params and returns its result, or its error reply.
func Ask[P, R any](t testing.TB, p Driven, m protocol.Method[P, R], params P) (R, *caller.RemoteError) {
	t.Helper()
	return drive.Try(t, (*drive.Plugin)(p.driven()), m, params)
}

// Err calls m with params and returns its error reply (nil on success).
func Err[P, R any](t testing.TB, p Driven, m protocol.Method[P, R], params P) *caller.RemoteError {
	t.Helper()
	_, re := Ask(t, p, m, params)
	return re
}

// Must is Ask that fails the test on an error reply, with the plugin's
// stderr.
func Must[P, R any](t testing.TB, p Driven, m protocol.Method[P, R], params P) R {
	t.Helper()
	res, re := Ask(t, p, m, params)
	if re != nil {
		t.Fatalf("%s: %v\n%s", m.Name, re, drive.Tail(p.driven().Stderr.String()))
	}
	return res
}

// Reply is a call's answer: its result or its error reply, and the line
// that carried it.
type Reply struct {
	Result json.RawMessage
	Error  *caller.RemoteError
	Raw    []byte
}

// Send calls m with params and returns its answer as sent, with its line
// (for the tests of the exact reply).
func Send[P, R any](t testing.TB, p Driven, m protocol.Method[P, R], params P) Reply {
	t.Helper()
	d := p.driven()
	res, re := drive.TryRaw(t, (*drive.Plugin)(d), m.Name, params)
	return Reply{Result: res, Error: re, Raw: d.lastReply(t, m.Name)}
}

// lastReply is the line that answered the last call of method.
func (p *Plugin) lastReply(t testing.TB, method string) []byte {
	t.Helper()
	var id string
	for _, e := range p.Wire.Events() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if e.Line == nil || json.Unmarshal(e.Line, &m) != nil {
			continue
		}
		switch {
		case e.Dir == caller.Out && m.Method == method:
			id = string(m.ID)
		case e.Dir == caller.In && m.Method == "" && string(m.ID) == id:
			return e.Line
		}
	}
	t.Fatalf("no reply to %s on the wire", method)
	return nil
}

// SendAway sends a request whose answer may never come (the test kills
// the plugin under it): nothing waits for it.
func (p *Plugin) SendAway(method string, params any) {
	go p.Call(context.Background(), method, params, p.Budget)
}

// Kill SIGKILLs the plugin (its group's leader) and waits until it is
// gone.
func (p *Plugin) Kill() {
	_ = syscall.Kill(p.Pgid(), syscall.SIGKILL)
	<-p.Done()
}

// KillDuring is a crash drill's kill: it sends method with params, waits
// after, and SIGKILLs the plugin under the call (its answer, if any, is
// never read).
func (p *Plugin) KillDuring(method string, params any, after time.Duration) {
	p.SendAway(method, params)
	time.Sleep(after)
	p.Kill()
}

// TimeAcquire acquires a host for key, releases it, and returns how long
// the whole acquire took: the span a drill's kills of host.acquire spread
// over.
func (p *Plugin) TimeAcquire(t testing.TB, key string, params map[string]string) time.Duration {
	t.Helper()
	t0 := time.Now()
	p.Acquire(t, key, params)
	d := time.Since(t0)
	Must(t, p, protocol.MethodHostRelease, KeyParams(key))
	return d
}

// Acquire acquires a host for key and returns its result.
func (p *Plugin) Acquire(t testing.TB, key string, params map[string]string) protocol.AcquireResult {
	t.Helper()
	res := Must(t, p, protocol.MethodHostAcquire, AcquireParams(key, params))
	if res.Handle == "" {
		t.Fatalf("host.acquire: no handle")
	}
	return res
}

// Lookup looks key up (host.lookup, fenced or not) and returns the
// answer.
func (p *Plugin) Lookup(t testing.TB, key string, fence bool) protocol.HostLookupResult {
	t.Helper()
	return Must(t, p, protocol.MethodHostLookup, LookupParams(key, fence))
}

// Run runs script on handle (cwd ".") and returns its result.
func (p *Plugin) Run(t testing.TB, handle, script string) protocol.ExecResult {
	t.Helper()
	return Must(t, p, protocol.MethodLinkExec, ExecParams(handle, script, ".", 60_000))
}

// LocalRepo is a local repository with n commits, in a path with a space
// (the link's ext:: escaping under test), and its HEAD.
func LocalRepo(t testing.TB, n int) (string, string) {
	t.Helper()
	contents := make([]string, n)
	for i := range contents {
		contents[i] = strings.Repeat("x", i+1)
	}
	return gitrepo.Repo(t, filepath.Join(t.TempDir(), "local repo"), contents...)
}

// ExitCode is a run's exit code as text ("null" for none).
func ExitCode(r protocol.ExecResult) string {
	if r.ExitCode == nil {
		return "null"
	}
	return fmt.Sprint(*r.ExitCode)
}
