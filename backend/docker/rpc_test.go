package docker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The tests drive the built plugin binary through caller (testutil/drive),
// as mu does, against the real Docker Engine and the project's test image.

var runID string // labels this test binary's containers: org.mu-plugins.testrun

func TestMain(m *testing.M) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	runID = hex.EncodeToString(b[:])
	testutil.Main(m, nil, cleanupRun)
}

// binPath is the plugin binary the tests run, built (with -race when the
// tests run with it) once.
func binPath(t testing.TB) string {
	t.Helper()
	return testutil.BuildRace(t, "github.com/mu-org/mu-plugins/cmd/mu-plugin-docker")
}

// cleanupRun removes every container this test binary made.
func cleanupRun() {
	ids := labelled("org.mu-plugins.testrun=" + runID)
	if len(ids) > 0 {
		_ = exec.Command("docker", append([]string{"rm", "-f", "-v"}, ids...)...).Run()
	}
}

// labelled lists this test binary's containers (any state) with label l.
func labelled(l string) []string {
	out, err := exec.Command("docker", "ps", "-aq", "--no-trunc", "-f", "label="+l,
		"-f", "label=org.mu-plugins.testrun="+runID).Output()
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}

// plugin is mu-plugin-docker as a test drives it. The params it sends are
// not checked against the schema: the plugin's own checks are under test.
type plugin struct {
	*drive.Plugin
	prefix string
	decl   protocol.InitializeResult
}

// reply is a call's answer: its result or its error reply, and the line
// that carried it.
type reply struct {
	Result json.RawMessage
	Error  *caller.RemoteError
	raw    []byte
}

// newPrefix gives each test its own container-name prefix.
func newPrefix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "mutest-" + hex.EncodeToString(b[:])
}

// start runs the plugin with a fresh prefix, on the test image.
func start(t testing.TB, args ...string) *plugin {
	t.Helper()
	testimage.Ensure(t)
	return startAt(t, binPath(t), newPrefix(), args...)
}

// startOn runs the plugin with prefix (a second invocation of the same
// configuration, or a test that needs no image).
func startOn(t testing.TB, prefix string, args ...string) *plugin {
	t.Helper()
	return startAt(t, binPath(t), prefix, args...)
}

// pluginConfig is how the tests run the plugin registered at path (its
// basename names it): one attempt a call, a handshake may take 30 s (an
// Engine that never answers), and a stop gives it 10 s to exit on stdin's
// EOF.
func pluginConfig(path, prefix string, args ...string) caller.Config {
	argv := append([]string{path, "--prefix", prefix, "--image", testimage.Name, "--label", "org.mu-plugins.test=1",
		"--label", "org.mu-plugins.testrun=" + runID}, args...)
	return caller.Config{Name: strings.TrimPrefix(filepath.Base(path), "mu-plugin-"), Argv: argv,
		SkipParamsCheck: true, Retries: -1, HandshakeTimeout: 30 * time.Second, StopGrace: 10 * time.Second}
}

// startAt starts the plugin registered at path, as mu does (the handshake
// included), and stops it with stdin's EOF when the test ends.
func startAt(t testing.TB, path, prefix string, args ...string) *plugin {
	t.Helper()
	dp := drive.Start(t, pluginConfig(path, prefix, args...))
	dp.Budget = 2 * time.Minute
	p := &plugin{Plugin: dp, prefix: prefix, decl: dp.Declaration()}
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop closes stdin, as mu's death would, and fails the test unless the
// plugin exits within 10 s (its group is killed then).
func (p *plugin) stop(t testing.TB) {
	if rep := p.CloseStdin(); rep.LeaderKilled() {
		t.Errorf("the plugin did not exit within 10 s of stdin EOF")
	}
}

// send sends one request and returns its answer.
func (p *plugin) send(t testing.TB, method string, params any) reply {
	t.Helper()
	res, re := drive.Try[json.RawMessage](t, p.Plugin, method, params)
	return reply{Result: res, Error: re, raw: p.lastReply(t, method)}
}

// lastReply is the line that answered the last call of method.
func (p *plugin) lastReply(t testing.TB, method string) []byte {
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

// call sends a request and decodes its result into out; it returns the
// error reply.
func (p *plugin) call(t testing.TB, method string, params any, out any) *caller.RemoteError {
	t.Helper()
	res, re := drive.Try[json.RawMessage](t, p.Plugin, method, params)
	if re == nil && out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			t.Fatalf("%s: decoding %s: %v", method, res, err)
		}
	}
	return re
}

// must is call that fails the test on an error reply.
func (p *plugin) must(t testing.TB, method string, params any, out any) {
	t.Helper()
	if err := p.call(t, method, params, out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

// sendAway sends a request whose answer may never come (the test kills the
// plugin under it): nothing waits for it.
func (p *plugin) sendAway(method string, params any) {
	go p.Call(context.Background(), method, params, p.Budget)
}

// kill SIGKILLs the plugin (its group's leader) and waits until it is
// gone.
func (p *plugin) kill() {
	_ = syscall.Kill(p.Pgid(), syscall.SIGKILL)
	<-p.Done()
}

// ---- params builders ----

func deadline() int64 { return time.Now().Add(2 * time.Minute).UnixMilli() }

func hostTarget(handle string) map[string]any {
	h := map[string]any{"name": "box"}
	if handle != "" {
		h["handle"] = handle
	}
	return map[string]any{"host": h}
}

func acquireParams(key string, params map[string]string) map[string]any {
	if params == nil {
		params = map[string]string{}
	}
	return map[string]any{"deadline": deadline(), "target": hostTarget(""), "key": key, "params": params}
}

func keyParams(key string) map[string]any {
	return map[string]any{"deadline": deadline(), "target": hostTarget(""), "key": key}
}

func lookupParams(key string, fence bool) map[string]any {
	return map[string]any{"deadline": deadline(), "target": hostTarget(""), "key": key, "fence": fence}
}

func execParams(handle, script, cwd string, timeoutMs int64) map[string]any {
	return map[string]any{"deadline": time.Now().Add(time.Duration(timeoutMs)*time.Millisecond + 30*time.Second).UnixMilli(),
		"target": hostTarget(handle), "script": script, "cwd": cwd, "timeoutMs": timeoutMs}
}

// acquire acquires a host for key and registers its release.
func (p *plugin) acquire(t testing.TB, key string, params map[string]string) protocol.AcquireResult {
	t.Helper()
	var res protocol.AcquireResult
	p.must(t, "host.acquire", acquireParams(key, params), &res)
	if res.Handle == "" {
		t.Fatalf("host.acquire: no handle")
	}
	return res
}

// run runs script on handle and returns its result.
func (p *plugin) run(t testing.TB, handle, script string) protocol.ExecResult {
	t.Helper()
	var r protocol.ExecResult
	p.must(t, "link.exec", execParams(handle, script, ".", 60_000), &r)
	return r
}

// docker runs the docker CLI and returns its trimmed stdout.
func docker(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func exitCode(r protocol.ExecResult) string {
	if r.ExitCode == nil {
		return "null"
	}
	return fmt.Sprint(*r.ExitCode)
}
