package tmuxjob_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/osproc"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
)

// host is a job host on this machine: a state root, real tmux on its own
// socket, real sh, the test agent installed.
type host struct {
	t     *testing.T
	root  string
	jobs  *tmuxjob.Jobs
	agent string // the test agent's path
	r     tmuxjob.Runner
}

func requireTools(t testing.TB) {
	t.Helper()
	for _, c := range []string{"tmux", "sh", "flock", "base64", "git"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Fatalf("%s is required on this machine for the tmuxjob tests (scripts/deps.sh installs it): %v", c, err)
		}
	}
}

func newHost(t testing.TB, mod ...func(*tmuxjob.Options)) *host {
	t.Helper()
	return newHostOn(t, tmuxjob.LocalRunner{}, mod...)
}

// shimmed is a LocalRunner whose PATH finds the sh script body as name
// first (a host tool that acts otherwise).
func shimmed(t testing.TB, name, body string) tmuxjob.LocalRunner {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return tmuxjob.LocalRunner{Env: append(tmuxjob.MinimalEnv(), "PATH="+bin+":"+os.Getenv("PATH"))}
}

// newHostOn is newHost over runner r (a LocalRunner with its own Env).
func newHostOn(t testing.TB, r tmuxjob.LocalRunner, mod ...func(*tmuxjob.Options)) *host {
	t.Helper()
	requireTools(t)
	root, err := os.MkdirTemp("", "tj")
	if err != nil {
		t.Fatal(err)
	}
	opts := tmuxjob.Options{Root: root, Kind: "tmux", Channel: "tmux-test", Poll: 50 * time.Millisecond}
	for _, m := range mod {
		m(&opts)
	}
	j, err := tmuxjob.New(r, opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &host{root: root, jobs: j, agent: filepath.Join(root, "bin", "mu-test-agent"), r: r}
	if tt, ok := t.(*testing.T); ok {
		h.t = tt
	}
	if err := agent.Install(context.Background(), r, h.agent); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", filepath.Join(root, "tmux.sock"), "kill-server").Run()
		killMarked(root)
		os.RemoveAll(root)
	})
	return h
}

// killMarked kills every process whose environment names a channel under
// root (whatever a failed test left behind).
func killMarked(root string) {
	for _, pid := range marked(root) {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	}
}

// marked lists the live processes carrying a job mark under root.
func marked(root string) []int {
	return osproc.Procs(func(kv string) bool { return strings.HasPrefix(kv, "MU_CHANNEL_DIR="+root+"/") })
}

func base(key string) protocol.Base {
	return protocol.Base{Deadline: time.Now().Add(time.Minute).UnixMilli(),
		Target: protocol.Target{Host: protocol.HostRef{Name: "local"}, Job: &protocol.JobRef{Kind: "tmux", Key: key},
			Agent: &protocol.AgentRef{Workstream: "ws", Name: "a1", Incarnation: 1}}}
}

func spec(cmd string) protocol.JobSpec {
	return protocol.JobSpec{Workstream: "ws", Name: "a1", Harness: "test", Role: "full-access", Cmd: cmd,
		CommandSource: "test", Cwd: "", Env: map[string]string{}}
}

// startAgent starts the test agent under key and waits for its baseline.
// withAgent is a new host running the test agent as job key (its harness
// reported), and a context for the test's calls.
func withAgent(t testing.TB, key string) (*host, context.Context) {
	t.Helper()
	h := newHost(t)
	h.startAgent(t, key, nil, "")
	return h, waitfor.Context(t, 2*time.Minute)
}

func (h *host) startAgent(t testing.TB, key string, env map[string]string, cwd string) protocol.JobStartResult {
	t.Helper()
	s := spec("exec sh " + words.ShQuote(h.agent))
	if env != nil {
		s.Env = env
	}
	s.Cwd = cwd
	res, err := h.jobs.Start(waitfor.Context(t, 2*time.Minute), protocol.JobStartParams{Base: base(key), Key: key, Spec: s})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	h.waitBaseline(t, key)
	return res
}

// via is a second plugin's view of the same host: its runs go through r.
func (h *host) via(t testing.TB, r tmuxjob.Runner) *tmuxjob.Jobs {
	t.Helper()
	j, err := tmuxjob.New(r, tmuxjob.Options{Root: h.root, Kind: "tmux", Channel: "tmux-test"})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// sendAsync sends through j in the background; the channel gets its error.
func sendAsync(ctx context.Context, j *tmuxjob.Jobs, key, msgID, text string) <-chan error {
	sent := make(chan error, 1)
	go func() {
		_, err := j.Send(ctx, protocol.SendParams{Base: base(key), Text: text, MsgID: msgID, Mode: protocol.ModeFollowUp})
		sent <- err
	}()
	return sent
}

func (h *host) waitBaseline(t testing.TB, key string) *protocol.Baseline {
	t.Helper()
	var b *protocol.Baseline
	waitfor.Eventually(t, "the harness reports a baseline", func() bool {
		var err error
		b, err = h.jobs.Baseline(waitfor.Context(t, 2*time.Minute), key)
		return err == nil && b != nil
	})
	return b
}

func (h *host) lastRun(t testing.TB, key string, after int64) *protocol.Observation {
	t.Helper()
	var o *protocol.Observation
	waitfor.Eventually(t, "turn settles", func() bool {
		var err error
		o, err = h.jobs.LastRun(waitfor.Context(t, 2*time.Minute), protocol.LastRunParams{Base: base(key), AfterRuns: after})
		if err != nil {
			t.Fatalf("lastRun: %v", err)
		}
		return o != nil
	})
	return o
}

func (h *host) send(t testing.TB, key, msgID, text string) protocol.SendResult {
	t.Helper()
	r, err := h.jobs.Send(waitfor.Context(t, 2*time.Minute), protocol.SendParams{Base: base(key), Text: text, MsgID: msgID, Mode: protocol.ModeFollowUp})
	if err != nil {
		t.Fatalf("send %s: %v", msgID, err)
	}
	return r
}

func (h *host) reading(t testing.TB, key string) protocol.Reading {
	t.Helper()
	m, err := h.jobs.ReadStates(waitfor.Context(t, 2*time.Minute), protocol.ReadStatesParams{Base: base(key), Targets: []protocol.AgentName{{Workstream: "ws", Name: "a1"}}})
	if err != nil {
		t.Fatalf("readStates: %v", err)
	}
	r, ok := m["ws/a1"]
	if !ok {
		t.Fatalf("readStates: no reading for ws/a1: %v", m)
	}
	return r
}

// startBare starts key as a job whose only process sleeps: the test (or
// benchmark) is its harness and writes its state with writeState.
func (h *host) startBare(t testing.TB, key string) {
	t.Helper()
	if _, err := h.jobs.Start(waitfor.Context(t, 2*time.Minute), protocol.JobStartParams{Base: base(key), Key: key, Spec: spec("exec sleep 1000")}); err != nil {
		t.Fatal(err)
	}
}

// queued lists the entries of a channel queue (inbox/, answers/) that are
// in (docs/harness.md): not those whose name starts with ".", which a
// harness ignores (an entry being written, a spare made ahead).
func queued(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return names
}

// writeState writes key's harness state as docs/harness.md asks: aside,
// then renamed into place.
func (h *host) writeState(t testing.TB, key, state string) {
	t.Helper()
	out := filepath.Join(h.jobs.ChannelDir(key), "out")
	tmp := filepath.Join(out, "tmp.state")
	if err := os.WriteFile(tmp, []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(out, "state")); err != nil {
		t.Fatal(err)
	}
}
