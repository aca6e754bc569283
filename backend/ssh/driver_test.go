package ssh

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/protocol"
)

// pluginBin is the built mu-plugin-ssh (TestMain builds it once).
var pluginBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mu-plugin-ssh-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginBin = filepath.Join(dir, "mu-plugin-ssh")
	out, err := exec.Command("go", "build", "-o", pluginBin, "github.com/mu-org/mu-plugins/cmd/mu-plugin-ssh").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building mu-plugin-ssh: %v\n%s", err, out)
		os.Exit(1)
	}
	os.Unsetenv("SSH_AUTH_SOCK")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// reply is one JSON-RPC reply as the driver sees it.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Kind   string `json:"kind"`
			Remedy string `json:"remedy"`
		} `json:"data"`
	} `json:"error"`
	Method string `json:"method"`
	Raw    int    `json:"-"` // the line's length
}

// driver is a small line-based JSON-RPC caller over a plugin's pipes.
type driver struct {
	t    testing.TB
	in   io.WriteCloser
	mu   sync.Mutex
	next int
	wait map[string]chan reply
	done chan struct{}
}

func newDriver(t testing.TB, in io.WriteCloser, out io.Reader) *driver {
	d := &driver{t: t, in: in, wait: map[string]chan reply{}, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		br := bufio.NewReaderSize(out, 1<<16)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				if len(line)-1 > protocol.MaxLine {
					t.Errorf("plugin wrote a %d-byte line, over 1 MiB", len(line)-1)
				}
				var r reply
				if err := json.Unmarshal(line, &r); err != nil {
					t.Errorf("plugin wrote invalid JSON: %v: %.200s", err, line)
					continue
				}
				r.Raw = len(line) - 1
				d.mu.Lock()
				ch := d.wait[string(r.ID)]
				delete(d.wait, string(r.ID))
				d.mu.Unlock()
				if ch != nil {
					ch <- r
				} else if r.Method == "" {
					t.Errorf("reply to no pending call: %.200s", line)
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return d
}

// send writes a request and returns the channel its reply arrives on.
func (d *driver) send(method string, params any) (chan reply, int) {
	d.mu.Lock()
	d.next++
	id := d.next
	ch := make(chan reply, 1)
	d.wait[fmt.Sprint(id)] = ch
	d.mu.Unlock()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		d.t.Fatal(err)
	}
	d.mu.Lock()
	_, err = d.in.Write(append(b, '\n'))
	d.mu.Unlock()
	if err != nil {
		d.t.Fatalf("write %s: %v", method, err)
	}
	return ch, id
}

func (d *driver) notify(method string, params any) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	d.mu.Lock()
	defer d.mu.Unlock()
	_, _ = d.in.Write(append(b, '\n'))
}

// call sends and waits (bounded generously) for the reply.
func (d *driver) call(method string, params any) reply {
	d.t.Helper()
	ch, _ := d.send(method, params)
	return d.await(ch, method)
}

func (d *driver) await(ch chan reply, what string) reply {
	d.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(120 * time.Second):
		d.t.Fatalf("no reply to %s within 120 s", what)
	}
	return reply{}
}

func (d *driver) initialize() protocol.InitializeResult {
	d.t.Helper()
	r := d.call("initialize", map[string]any{"protocol": map[string]int{"min": 1, "max": 1}, "mu": "5"})
	if r.Error != nil {
		d.t.Fatalf("initialize: %s", r.Error.Message)
	}
	var res protocol.InitializeResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		d.t.Fatal(err)
	}
	return res
}

// base is every call's deadline and target.
func base(host string, timeout time.Duration) map[string]any {
	return map[string]any{
		"deadline": time.Now().Add(timeout + protocol.Grace).UnixMilli(),
		"target":   map[string]any{"host": map[string]any{"name": host}},
	}
}

func execParams(host, script, cwd string, timeout time.Duration) map[string]any {
	p := base(host, timeout)
	p["script"], p["cwd"], p["timeoutMs"] = script, cwd, timeout.Milliseconds()
	return p
}

func (d *driver) exec(host, script, cwd string, timeout time.Duration) (protocol.ExecResult, reply) {
	d.t.Helper()
	r := d.call("link.exec", execParams(host, script, cwd, timeout))
	var res protocol.ExecResult
	if r.Error == nil {
		if err := json.Unmarshal(r.Result, &res); err != nil {
			d.t.Fatalf("exec result: %v", err)
		}
	}
	return res, r
}

// mustExec runs a script that must succeed with exit 0.
func (d *driver) mustExec(host, script string) string {
	d.t.Helper()
	res, r := d.exec(host, script, ".", 60*time.Second)
	if r.Error != nil {
		d.t.Fatalf("exec %q: %s (%s) remedy %s", script, r.Error.Message, r.Error.Data.Kind, r.Error.Data.Remedy)
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

// inproc serves a Backend in-process over pipes (race-detector coverage,
// and unexported knobs such as remoteShell), closed when the test ends.
func inproc(t testing.TB, cfg Config) (*driver, *Backend, <-chan struct{}) {
	t.Helper()
	if cfg.ShimExe == "" {
		cfg.ShimExe = pluginBin
	}
	b := New(cfg, testLogger(t))
	opts := b.Options()
	opts.Name, opts.Version = "ssh", "test"
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	opts.In, opts.Out = inR, outW
	opts.Logger = testLogger(t)
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := protocol.Serve(context.Background(), opts); err != nil {
			t.Errorf("Serve: %v", err)
		}
		outW.Close()
	}()
	d := newDriver(t, inW, outR)
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			t.Errorf("Serve did not return within 30 s of stdin EOF")
		}
	})
	d.initialize()
	return d, b, served
}

// subproc runs the built binary with args; env adds to the environment.
func subproc(t testing.TB, env []string, args ...string) (*driver, *exec.Cmd, *lockedWriter) {
	t.Helper()
	cmd := exec.Command(pluginBin, args...)
	cmd.Env = append(os.Environ(), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedWriter{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, in, out)
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("plugin did not exit within 30 s of stdin EOF")
		}
	})
	return d, cmd, stderr
}

// lockedWriter collects a plugin's stderr.
type lockedWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
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
