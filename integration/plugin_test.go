//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The secrets drill runs through the whole suite: every plugin process
// any test starts gets this random MU_PLUGIN_CANARY, and every line it
// writes (stdout on the wire, stderr) is searched for it.
var (
	canary        = "mu-canary-" + words.RandHex(16)
	canaryPlugins atomic.Int64 // plugin processes checked
	canaryLeaks   atomic.Int64 // processes whose output carried the canary
)

// TestMain prints the secrets drill's line once every test has run, and
// fails the run if any plugin leaked the canary.
func TestMain(m *testing.M) {
	code := m.Run()
	n, leaks := canaryPlugins.Load(), canaryLeaks.Load()
	fmt.Printf("drill: secrets trials=%d ok=%d\n", n, n-leaks)
	if leaks > 0 {
		fmt.Printf("FAIL: %d plugin process(es) leaked MU_PLUGIN_CANARY\n", leaks)
		code = 1
	}
	os.Exit(code)
}

// watcher keeps a plugin's wire lines and stderr, for the canary check.
type watcher struct {
	mu     sync.Mutex
	stderr bytes.Buffer
	hits   []string
}

func (w *watcher) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stderr.Len() < 8<<20 {
		w.stderr.Write(b)
	}
	return len(b), nil
}

func (w *watcher) event(e caller.Event) {
	if e.Dir == caller.In && bytes.Contains(e.Line, []byte(canary)) {
		w.mu.Lock()
		w.hits = append(w.hits, "message: "+cut(string(e.Line), 200))
		w.mu.Unlock()
	}
}

// check reports where the canary appeared, once the process is gone.
func (w *watcher) check() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	hits := append([]string(nil), w.hits...)
	if bytes.Contains(w.stderr.Bytes(), []byte(canary)) {
		hits = append(hits, "stderr")
	}
	return hits
}

func (w *watcher) stderrText() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stderr.String()
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// spec names a plugin to start: its registered name and argv.
type spec struct {
	name string
	argv []string
}

func (e *Env) sshPlugin() spec {
	return spec{"ssh", []string{filepath.Join(e.Bin, "mu-plugin-ssh"),
		"--config", e.SSHConfig, "--known-hosts", e.KnownHosts, "--identity", e.Key}}
}

// dockerInstance is this run's instance of mu-plugin-docker: its own, so
// nothing of another run (or another test on the Engine) is ever addressed.
func (e *Env) dockerInstance() string { return "docker-it-" + e.Project }

// itLabel marks every container mu-plugin-docker creates in this run;
// scripts/integration.sh removes and checks them by it.
const itLabel = "org.mu-plugins.test.it"

func (e *Env) dockerPlugin(extra ...string) spec {
	argv := []string{filepath.Join(e.Bin, "mu-plugin-docker"),
		"--image", testimage.Name, "--instance", e.dockerInstance(),
		"--prefix", "mu-it", "--label", itLabel + "=" + e.Project}
	return spec{"docker", append(argv, extra...)}
}

// dockerOverSSH is mu-plugin-docker with the run's ssh config
// (--ssh-config), and the environment that makes its Engine ssh://DEST:
// engine-host directly, or engine-jump through the bastion.
func (e *Env) dockerOverSSH(dest string, extra ...string) (spec, []string) {
	return e.dockerPlugin(append([]string{"--ssh-config", e.SSHConfig}, extra...)...),
		[]string{"DOCKER_HOST=ssh://" + dest, "DOCKER_CONTEXT="}
}

// started is a running plugin with its watcher.
type started struct {
	*caller.Plugin
	w *watcher
}

// startPlugin starts s as mu does, with the canary in its environment. The
// test's cleanup stops it and checks the canary; a plugin a test killed
// is checked the same way.
func startPlugin(t testing.TB, s spec) *started {
	t.Helper()
	return startPluginEnv(t, s)
}

// startPluginEnv is startPlugin with env (KEY=VALUE) in the plugin's
// environment beyond mu's.
func startPluginEnv(t testing.TB, s spec, env ...string) *started {
	t.Helper()
	p, err := startPluginErr(t, s, env...)
	if err != nil {
		t.Fatalf("starting mu-plugin-%s: %v", s.name, err)
	}
	return p
}

func startPluginErr(t testing.TB, s spec, env ...string) (*started, error) {
	w := &watcher{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := caller.Start(ctx, caller.Config{
		Name:       s.name,
		Argv:       s.argv,
		Env:        append([]string{"MU_PLUGIN_CANARY=" + canary}, env...),
		Stderr:     w,
		Transcript: w.event,
	})
	if err != nil {
		return nil, fmt.Errorf("%w (stderr: %s)", err, cut(w.stderrText(), 400))
	}
	sp := &started{p, w}
	// The drill means something only if the plugin really holds the canary.
	if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.Pgid())); err == nil && !bytes.Contains(env, []byte("MU_PLUGIN_CANARY="+canary+"\x00")) {
		t.Errorf("mu-plugin-%s runs without the canary in its environment", s.name)
	}
	canaryPlugins.Add(1)
	t.Cleanup(func() {
		p.Stop()
		<-p.Done()
		if hits := w.check(); len(hits) > 0 {
			canaryLeaks.Add(1)
			t.Errorf("mu-plugin-%s leaked MU_PLUGIN_CANARY: %s", s.name, strings.Join(hits, "; "))
		}
	})
	return sp, nil
}

// drillLine prints the line the runner greps.
func drillLine(t testing.TB, name string, trials, ok int) {
	t.Helper()
	fmt.Printf("drill: %s trials=%d ok=%d\n", name, trials, ok)
	if ok != trials {
		t.Errorf("drill %s: %d of %d trials failed", name, trials-ok, trials)
	}
}

// ctxFor is waitfor.Context (the drills call it by this name).
var ctxFor = waitfor.Context

// The canary check bites: a message carrying the canary, or stderr that
// carries it split across two writes, is reported.
func TestCanaryWatcherCatches(t *testing.T) {
	w := &watcher{}
	w.event(caller.Event{Dir: caller.Out, Line: []byte(`{"params":"` + canary + `"}`)}) // mu's own lines are not the plugin's
	if hits := w.check(); len(hits) != 0 {
		t.Fatalf("an outbound line counted as a leak: %v", hits)
	}
	w.event(caller.Event{Dir: caller.In, Line: []byte(`{"result":"` + canary + `"}`)})
	half := len(canary) / 2
	_, _ = w.Write([]byte("log: " + canary[:half]))
	_, _ = w.Write([]byte(canary[half:] + "\n"))
	if hits := w.check(); len(hits) != 2 {
		t.Fatalf("want the message and stderr reported, got %v", hits)
	}
}
