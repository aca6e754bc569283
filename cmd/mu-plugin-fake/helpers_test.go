package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The test binary is the plugin: run as mu-plugin-fake (a symlink) with
// MU_FAKE_TEST_PLUGIN=1 it runs main instead of the tests, so the plugin
// runs under -race too.
func TestMain(m *testing.M) {
	if os.Getenv("MU_FAKE_TEST_PLUGIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

const canary = "canary-7f3e9a1c55d2"

var (
	binOnce sync.Once
	binPath string
)

// plugin is the absolute path of a mu-plugin-fake symlink to this binary.
func plugin(t testing.TB) string {
	binOnce.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			panic(err)
		}
		dir, err := os.MkdirTemp("", "fake-bin-")
		if err != nil {
			panic(err)
		}
		binPath = filepath.Join(dir, "mu-plugin-fake")
		if err := os.Symlink(exe, binPath); err != nil {
			panic(err)
		}
	})
	return binPath
}

// syncBuf is a goroutine-safe buffer for stderr.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type fakeProc struct {
	*caller.Plugin
	stderr *syncBuf
	wire   *syncBuf
}

func start(t testing.TB, args ...string) *fakeProc {
	t.Helper()
	fp := &fakeProc{stderr: &syncBuf{}, wire: &syncBuf{}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := caller.Start(ctx, caller.Config{
		Name:       "fake",
		Argv:       append([]string{plugin(t)}, args...),
		Env:        []string{"MU_FAKE_TEST_PLUGIN=1", "MU_PLUGIN_CANARY=" + canary},
		Stderr:     fp.stderr,
		Transcript: func(e caller.Event) { fp.wire.Write([]byte(e.String() + "\n")) },
		Retries:    -1,
	})
	if err != nil {
		t.Fatalf("start: %v\nstderr: %s", err, fp.stderr.String())
	}
	fp.Plugin = p
	t.Cleanup(func() {
		p.Stop()
		if strings.Contains(fp.wire.String(), canary) {
			t.Errorf("the canary appeared on the wire")
		}
	})
	return fp
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// call invokes method and decodes its result into T; it fails the test on
// an error.
func call[T any](t *testing.T, p *fakeProc, method string, params any) T {
	t.Helper()
	v, err := caller.Invoke[T](ctx(t), p.Plugin, method, params, 30*time.Second)
	if err != nil {
		t.Fatalf("%s: %v\nwire:\n%s\nstderr: %s", method, err, tail(p.wire.String()), p.stderr.String())
	}
	return v
}

// callErr invokes method and returns its remote error (nil on success).
func callErr(t *testing.T, p *fakeProc, method string, params any) *caller.RemoteError {
	t.Helper()
	_, err := p.Call(ctx(t), method, params, 30*time.Second)
	if err == nil {
		return nil
	}
	var re *caller.RemoteError
	if !errors.As(err, &re) {
		t.Fatalf("%s: %v, want an error reply", method, err)
	}
	return re
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

func host(name string) protocol.Target { return protocol.Target{Host: protocol.HostRef{Name: name}} }

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

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
