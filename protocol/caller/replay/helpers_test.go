package replay

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/programs"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The tests drive two real plugins: mu-plugin-fake, built once
// (programs.Build), and mu-plugin-dd, this test binary run as a small
// protocol.Serve plugin (ddplugin_test.go, through programs.Main) for the
// declarations the fake does not make (no lookup, receipt none, a file
// kind, unfenced lookups).

func TestMain(m *testing.M) {
	programs.Main(m, map[string]func(){"mu-plugin-dd": func() { os.Exit(runDD()) }})
}

// calls returns p's outbound lines calling method.
func calls(p *drive.Plugin, method string) []string {
	return p.Wire.Containing(caller.Out, `"method":"`+method+`"`)
}

// outMethods returns the method of every outbound line.
func outMethods(p *drive.Plugin) []string {
	var r []string
	for _, l := range p.Wire.Lines(caller.Out) {
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal([]byte(l), &m) == nil {
			r = append(r, m.Method)
		}
	}
	return r
}

func startCfg(t *testing.T, cfg caller.Config) *drive.Plugin {
	t.Helper()
	cfg.Retries = -1
	cfg.StopGrace = 2 * time.Second
	return drive.Start(t, cfg)
}

// fake starts mu-plugin-fake on the world in state, with faults (nil:
// none) and more flags.
func fake(t *testing.T, state string, faults []map[string]any, args ...string) *drive.Plugin {
	t.Helper()
	argv := []string{programs.Build(t, "github.com/mu-org/mu-plugins/cmd/mu-plugin-fake"), "--state", state, "--turn-ms", "50"}
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
func gone(t *testing.T, p *drive.Plugin) {
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
func unknownEffect(t *testing.T, j *Journal, p *drive.Plugin, method string, params any) *Intent {
	t.Helper()
	_, in, err := j.Effect(waitfor.Context(t, time.Minute), p.Plugin, method, "", params)
	if err == nil || in == nil {
		t.Fatalf("%s: err %v, intent %v: want an unknown outcome", method, err, in)
	}
	if _, lerr := j.Load(in.ID); lerr != nil {
		t.Fatalf("the intent of an unknown outcome is gone: %v", lerr)
	}
	return in
}

// crashed runs an effect through p1, a plugin that dies around it: the
// outcome is unknown, its intent kept, and p1's group is gone on return.
func crashed(t *testing.T, j *Journal, p1 *drive.Plugin, method string, params any) *Intent {
	t.Helper()
	in := unknownEffect(t, j, p1, method, params)
	gone(t, p1)
	return in
}

// wantRefused: the intent's effect, delayed (its exact params arriving
// only now, at p), is refused permanent: a fenced none was final.
func wantRefused(t *testing.T, p *drive.Plugin, in *Intent) {
	t.Helper()
	r, err := caller.NewRequest(in.Method, in.Params)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Send(waitfor.Context(t, time.Minute), r, 0)
	var re *caller.RemoteError
	if !errors.As(err, &re) || re.Kind != protocol.Permanent {
		t.Fatalf("the delayed %s after a fenced none: %v, want a permanent refusal", in.Method, err)
	}
}

func mustEffect(t *testing.T, j *Journal, p *drive.Plugin, method string, params any) json.RawMessage {
	t.Helper()
	res, in, err := j.Effect(waitfor.Context(t, time.Minute), p.Plugin, method, "", params)
	if err != nil || in != nil {
		t.Fatalf("%s: %v (intent %v)", method, err, in)
	}
	return res
}

// resolve resolves in as mu's next verb: the invocation that wrote it has
// ended (j.Next), and j is the next one.
func resolve(t *testing.T, j *Journal, p *drive.Plugin, in *Intent) Outcome {
	t.Helper()
	if err := j.Next(); err != nil {
		t.Fatal(err)
	}
	out, err := j.Resolve(waitfor.Context(t, time.Minute), p.Plugin, in)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	return out
}

// resolveFound resolves in at p, wants it found, and returns the found
// result as T.
func resolveFound[T any](t *testing.T, j *Journal, p *drive.Plugin, in *Intent) T {
	t.Helper()
	out := resolve(t, j, p, in)
	wantState(t, out, Found, "")
	var v T
	if err := json.Unmarshal(out.Result, &v); err != nil {
		t.Fatalf("found %s: %v", out.Result, err)
	}
	return v
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

// wantReissued: resolving in at p sends its effect again, once, with the
// intent's params (deadline aside), and settles it.
func wantReissued(t *testing.T, j *Journal, p *drive.Plugin, in *Intent) {
	t.Helper()
	wantState(t, resolve(t, j, p, in), Done, "")
	l := calls(p, in.Method)
	if len(l) != 1 {
		t.Fatalf("%s sent: %q, want one", in.Method, l)
	}
	sameButDeadline(t, l[0], in)
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
