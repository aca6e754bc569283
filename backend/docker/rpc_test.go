package docker_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/protocol"
)

// The tests drive the built plugin binary over its stdin and stdout, as mu
// does, against the real Docker Engine and the project's test image.

var (
	binPath string
	runID   string // labels this test binary's containers: org.mu-plugins.testrun
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mu-plugin-docker-test")
	if err != nil {
		panic(err)
	}
	binPath = filepath.Join(dir, "mu-plugin-docker")
	args := []string{"build", "-o", binPath}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, "github.com/mu-org/mu-plugins/cmd/mu-plugin-docker")...).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the plugin: %v\n%s", err, out)
		os.Exit(1)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	runID = hex.EncodeToString(b[:])
	code := m.Run()
	cleanupRun()
	os.RemoveAll(dir)
	os.Exit(code)
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

type plugin struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  *bytes.Buffer
	prefix  string
	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan reply
	decl    protocol.InitializeResult
	lines   chan []byte // every stdout line, for tests that check the raw wire
	done    chan struct{}

	waitOnce sync.Once
	exited   chan struct{}
}

type reply struct {
	ID     int64           `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
	raw    []byte
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    struct {
		Kind   string `json:"kind"`
		Remedy string `json:"remedy"`
	} `json:"data"`
}

func (e *rpcError) Error() string { return e.Data.Kind + ": " + e.Message }

// decode decodes a reply's result into out.
func (r reply) decode(out any) error { return json.Unmarshal(r.Result, out) }

// newPrefix gives each test its own container-name prefix.
func newPrefix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "mutest-" + hex.EncodeToString(b[:])
}

// start runs the plugin (built binary) and does the handshake.
func start(t testing.TB, args ...string) *plugin {
	t.Helper()
	testimage.Ensure(t)
	p := startRaw(t, newPrefix(), args...)
	var res protocol.InitializeResult
	if err := p.call(t, "initialize", map[string]any{"protocol": map[string]int{"min": 1, "max": 1}, "mu": "5"}, &res); err != nil {
		t.Fatalf("initialize: %v (stderr: %s)", err, p.stderr)
	}
	p.decl = res
	t.Cleanup(func() { p.stop(t) })
	return p
}

func startRaw(t testing.TB, prefix string, args ...string) *plugin {
	t.Helper()
	argv := append([]string{"--prefix", prefix, "--image", testimage.Name, "--label", "org.mu-plugins.test=1",
		"--label", "org.mu-plugins.testrun=" + runID}, args...)
	cmd := exec.Command(binPath, argv...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &plugin{cmd: cmd, stdin: stdin, stderr: &bytes.Buffer{}, prefix: prefix,
		pending: map[int64]chan reply{}, lines: make(chan []byte, 1024), done: make(chan struct{})}
	cmd.Stderr = &syncWriter{w: p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.read(stdout)
	return p
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func (p *plugin) read(r io.Reader) {
	defer close(p.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 4<<20)
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
		select {
		case p.lines <- line:
		default:
		}
		var rep reply
		if err := json.Unmarshal(line, &rep); err != nil {
			continue
		}
		rep.raw = line
		p.mu.Lock()
		ch := p.pending[rep.ID]
		delete(p.pending, rep.ID)
		p.mu.Unlock()
		if ch != nil {
			ch <- rep
		}
	}
}

// send writes one request and returns its reply (bounded wait).
func (p *plugin) send(t testing.TB, method string, params any) reply {
	t.Helper()
	return p.sendWait(t, method, params, 3*time.Minute)
}

// sendWait is send with the wait for the reply bounded by wait: a test
// that a plugin answers at all (not how fast) gives up there.
func (p *plugin) sendWait(t testing.TB, method string, params any, wait time.Duration) reply {
	t.Helper()
	id := p.nextID.Add(1)
	ch := make(chan reply, 1)
	p.mu.Lock()
	p.pending[id] = ch
	p.mu.Unlock()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		t.Fatalf("%s: writing: %v", method, err)
	}
	select {
	case rep := <-ch:
		return rep
	case <-p.done:
		t.Fatalf("%s: the plugin exited (stderr: %s)", method, p.stderr)
	case <-time.After(wait):
		t.Fatalf("%s: no reply in %v", method, wait)
	}
	return reply{}
}

// call sends a request and decodes its result into out; it returns the
// error object of an error reply.
func (p *plugin) call(t testing.TB, method string, params any, out any) *rpcError {
	t.Helper()
	rep := p.send(t, method, params)
	if rep.Error != nil {
		return rep.Error
	}
	if out != nil {
		if err := json.Unmarshal(rep.Result, out); err != nil {
			t.Fatalf("%s: decoding %s: %v", method, rep.Result, err)
		}
	}
	return nil
}

// must is call that fails the test on an error reply.
func (p *plugin) must(t testing.TB, method string, params any, out any) {
	t.Helper()
	if err := p.call(t, method, params, out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

// wait returns a channel closed once the plugin process has exited.
func (p *plugin) wait() <-chan struct{} {
	p.waitOnce.Do(func() {
		p.exited = make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(p.exited) }()
	})
	return p.exited
}

// stop closes stdin and waits for the process to exit (killing it after
// 10 s); stdout closes before the plugin has finished stopping.
func (p *plugin) stop(t testing.TB) {
	_ = p.stdin.Close()
	select {
	case <-p.wait():
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.wait()
		t.Errorf("the plugin did not exit within 10 s of stdin EOF")
	}
	if s := p.stderr.String(); strings.Contains(s, "panic") || strings.Contains(s, "DATA RACE") {
		t.Errorf("plugin panicked or raced: %s", s)
	}
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
