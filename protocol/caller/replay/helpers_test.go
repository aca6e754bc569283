package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

// The tests drive two real plugins: mu-plugin-fake, built once by TestMain
// (go build), and "dd", this test binary re-exec'd as a small
// protocol.Serve plugin (ddplugin_test.go) for the declarations the fake
// does not make (no lookup, receipt none, a file kind, unfenced lookups).

var fakeBin string

func TestMain(m *testing.M) {
	if os.Getenv(envDD) != "" {
		os.Exit(runDD())
	}
	dir, err := os.MkdirTemp("", "replay-fake-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeBin = filepath.Join(dir, "mu-plugin-fake")
	out, err := exec.Command("go", "build", "-o", fakeBin, "github.com/mu-org/mu-plugins/cmd/mu-plugin-fake").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building mu-plugin-fake: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// wire records one plugin's transcript.
type wire struct {
	mu    sync.Mutex
	lines []caller.Event
}

func (w *wire) add(e caller.Event) {
	w.mu.Lock()
	w.lines = append(w.lines, e)
	w.mu.Unlock()
}

// out returns the outbound lines calling method.
func (w *wire) out(method string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var r []string
	for _, e := range w.lines {
		if e.Dir == caller.Out && strings.Contains(string(e.Line), `"method":"`+method+`"`) {
			r = append(r, string(e.Line))
		}
	}
	return r
}

// outMethods returns the method of every outbound line.
func (w *wire) outMethods() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var r []string
	for _, e := range w.lines {
		var m struct {
			Method string `json:"method"`
		}
		if e.Dir == caller.Out && json.Unmarshal(e.Line, &m) == nil {
			r = append(r, m.Method)
		}
	}
	return r
}

type plug struct {
	*caller.Plugin
	w      *wire
	stderr *bytes.Buffer
}

func startCfg(t *testing.T, cfg caller.Config) *plug {
	t.Helper()
	pl := &plug{w: &wire{}, stderr: &bytes.Buffer{}}
	cfg.Transcript = pl.w.add
	cfg.Retries = -1
	cfg.StopGrace = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := caller.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start %s: %v", cfg.Name, err)
	}
	pl.Plugin = p
	t.Cleanup(func() { p.Stop() })
	return pl
}

// fake starts mu-plugin-fake on the world in state, with faults (nil:
// none) and more flags.
func fake(t *testing.T, state string, faults []map[string]any, args ...string) *plug {
	t.Helper()
	argv := []string{fakeBin, "--state", state, "--turn-ms", "50"}
	if faults != nil {
		b, _ := json.Marshal(map[string]any{"faults": faults})
		f := filepath.Join(t.TempDir(), "scenario.json")
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		argv = append(argv, "--scenario", f)
	}
	return startCfg(t, caller.Config{Name: "fake", Argv: append(argv, args...)})
}

func crash(method, fault string) []map[string]any {
	return []map[string]any{{"method": method, "fault": fault}}
}

// gone waits for a crashed plugin's stop to finish (its group empty).
func gone(t *testing.T, p *plug) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the crashed plugin never stopped")
	}
	if !caller.GroupEmpty(p.Pgid()) {
		t.Fatal("the crashed plugin's group is not empty")
	}
}

func tctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func openJ(t *testing.T) *Journal {
	t.Helper()
	j, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func box() protocol.Target { return protocol.Target{Host: protocol.HostRef{Name: "box"}} }

func acquireP(key string) protocol.AcquireParams {
	return protocol.AcquireParams{Base: protocol.Base{Target: protocol.Target{Host: protocol.HostRef{Name: "pool"}}}, Key: key, Params: map[string]string{}}
}

func jobP(key, ws, name string) protocol.JobStartParams {
	return protocol.JobStartParams{Base: protocol.Base{Target: box()}, Key: key, Spec: protocol.JobSpec{
		Workstream: ws, Name: name, Harness: "pi", Role: "full-access", Cmd: "pi", CommandSource: "harness",
		Cwd: ".", Env: map[string]string{}}}
}

func agentT(ws, name, jobKey string) protocol.Target {
	return protocol.Target{Host: protocol.HostRef{Name: "box"},
		Agent: &protocol.AgentRef{Workstream: ws, Name: name, Incarnation: 1},
		Job:   &protocol.JobRef{Kind: "fake", Key: jobKey}}
}

// world reads the fake's saved world.
type fakeWorld struct {
	Hosts map[string]struct {
		State  string `json:"state"`
		Result struct {
			Handle string `json:"handle"`
		} `json:"result"`
	} `json:"hosts"`
	Jobs map[string]struct {
		State  string `json:"state"`
		Result struct {
			Handle string `json:"handle"`
		} `json:"result"`
	} `json:"jobs"`
	Agents map[string]struct {
		Events []struct {
			Who  string `json:"who"`
			Text string `json:"text"`
		} `json:"events"`
	} `json:"agents"`
	Fenced map[string]bool `json:"fenced"`
}

func world(t *testing.T, state string) fakeWorld {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "world.json"))
	if err != nil {
		t.Fatal(err)
	}
	var w fakeWorld
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// deliveries counts the turns the agent was given with text.
func (w fakeWorld) deliveries(agent, text string) int {
	n := 0
	for _, e := range w.Agents[agent].Events {
		if e.Who == "user" && e.Text == text {
			n++
		}
	}
	return n
}

// effect runs j.Effect and wants an unknown outcome with its intent kept.
func unknownEffect(t *testing.T, j *Journal, p *plug, method string, params any) *Intent {
	t.Helper()
	_, in, err := j.Effect(tctx(t), p.Plugin, method, "", params)
	if err == nil || in == nil {
		t.Fatalf("%s: err %v, intent %v: want an unknown outcome", method, err, in)
	}
	if _, lerr := j.Load(in.ID); lerr != nil {
		t.Fatalf("the intent of an unknown outcome is gone: %v", lerr)
	}
	return in
}

func mustEffect(t *testing.T, j *Journal, p *plug, method string, params any) json.RawMessage {
	t.Helper()
	res, in, err := j.Effect(tctx(t), p.Plugin, method, "", params)
	if err != nil || in != nil {
		t.Fatalf("%s: %v (intent %v)", method, err, in)
	}
	return res
}

func resolve(t *testing.T, j *Journal, p *plug, in *Intent) Outcome {
	t.Helper()
	out, err := j.Resolve(tctx(t), p.Plugin, in)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	return out
}

func wantState(t *testing.T, out Outcome, st State, reason string) {
	t.Helper()
	if out.State != st || (reason != "" && out.Reason != reason) {
		t.Fatalf("outcome %s, want %s (%s)", out, st, reason)
	}
}

func wantJournal(t *testing.T, j *Journal, n int) {
	t.Helper()
	l, err := j.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != n {
		t.Fatalf("the journal holds %d intents, want %d", len(l), n)
	}
}

// sameButDeadline: a resend's params are the intent's, deadline aside.
func sameButDeadline(t *testing.T, line string, in *Intent) {
	t.Helper()
	var env struct {
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal([]byte(line), &env); err != nil {
		t.Fatal(err)
	}
	r, err := caller.NewRequest(in.Method, env.Params)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.Params(0)); got != string(in.Params) || sha([]byte(got)) != in.SHA256 {
		t.Fatalf("resent params differ from the intent's:\n got %s\nwant %s", got, in.Params)
	}
}
