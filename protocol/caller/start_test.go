package caller

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mu-org/mu-plugins/protocol"
)

func TestGoodPluginHandshakeCallStop(t *testing.T) {
	h, p := startGood(t)
	if got := p.Declaration().Plugin.Name; got != "good" {
		t.Fatalf("declared name %q", got)
	}
	if p.Pgid() == syscall.Getpgrp() || len(groupMembers(p.Pgid())) != 1 {
		t.Fatalf("the plugin is not alone in its own process group (pgid %d, ours %d)", p.Pgid(), syscall.Getpgrp())
	}
	res, err := p.Exec(context.Background(), tgt, "true", ".", 0)
	if err != nil || res.Stdout != "ok" || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("exec: %+v, %v", res, err)
	}
	st, err := Invoke(context.Background(), p, protocol.MethodJobStatus, protocol.Base{Target: tgt})
	if err != nil || st.State != protocol.JobRunning {
		t.Fatalf("job.status: %+v %v", st, err)
	}
	rep := p.Stop()
	if !rep.Graceful || rep.Killed != 0 || !rep.GroupEmpty {
		t.Fatalf("a good plugin's stop: %+v", rep)
	}
	if !errors.Is(rep.Cause, ErrStopped) {
		t.Fatalf("cause %v", rep.Cause)
	}
	out := h.tr.Lines(Out)
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":{"min":1,"max":1},"mu":"5"}}`
	if len(out) == 0 || out[0] != init {
		t.Fatalf("first line %q, want %q", out, init)
	}
	// Every request but initialize and shutdown carries a deadline; the
	// stop ends with shutdown (an id, no params).
	for _, l := range out[1 : len(out)-1] {
		if !strings.Contains(l, `"params":{"deadline":`) {
			t.Errorf("request without a leading deadline: %s", l)
		}
	}
	if last := out[len(out)-1]; !regexp.MustCompile(`^\{"jsonrpc":"2.0","id":\d+,"method":"shutdown"\}$`).MatchString(last) {
		t.Errorf("last line %s, want shutdown", last)
	}
	if _, err := p.Exec(context.Background(), tgt, "true", ".", 0); !errors.Is(err, ErrNotSent) || !errors.Is(err, ErrStopped) {
		t.Fatalf("call after stop: %v, want not sent (stopped)", err)
	}
}

func TestStopTwiceAndConcurrently(t *testing.T) {
	p := newHarness(t, "good", "good").start(t)
	var wg sync.WaitGroup
	reps := make([]StopReport, 4)
	for i := range reps {
		wg.Add(1)
		go func() { defer wg.Done(); reps[i] = p.Stop() }()
	}
	wg.Wait()
	for _, r := range reps {
		if r != reps[0] {
			t.Fatalf("reports differ: %+v vs %+v", r, reps[0])
		}
	}
	if p.Stop() != reps[0] {
		t.Fatal("a later Stop returned another report")
	}
}

func TestRunAlwaysStops(t *testing.T) {
	h := newHarness(t, "good", "good")
	var p *Plugin
	want := errors.New("verb failed")
	err := Run(context.Background(), h.cfg, func(pl *Plugin) error { p = pl; return want })
	if err != want {
		t.Fatalf("Run returned %v", err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Run returned with the plugin not stopped")
	}
	if !p.Report().GroupEmpty {
		t.Fatalf("report %+v", p.Report())
	}
}

func TestEnvironmentMinusLocalOnly(t *testing.T) {
	// Only the variables this test sets: none the runner's environment has
	// (make test exports MU_PLUGINS_BIN, for one).
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "MU_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	for _, k := range []string{"MU_DB_PATH", "MU_STATE_DIR", "MU_SYNC_DIR", "MU_WORKSTREAM", "MU_AGENT", "MU_AGENT_NAME", "MU_CTL_SOCK", "MU_SOCKET", "MU_KEEP_ME"} {
		t.Setenv(k, "secret-value")
	}
	h := newHarness(t, "good", "good", "MU_STATE_DIR=/override", "MU_EXTRA=1")
	p := h.start(t)
	res, err := p.Exec(context.Background(), tgt, "env-names", ".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "MU_EXTRA MU_KEEP_ME" {
		t.Fatalf("the plugin saw MU_* variables %q, want only MU_EXTRA MU_KEEP_ME", res.Stdout)
	}
}

func TestPluginEnv(t *testing.T) {
	got := PluginEnv([]string{"A=1", "MU_DB_PATH=x", "B=2", "MU_AGENT_ID=7", "junk"}, []string{"A=3", "MU_CTL_SOCKET=/s", "C=4"})
	want := []string{"A=3", "B=2", "C=4"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %q want %q", got, want)
	}
}

func TestDeclarationRawIsWhatWasSent(t *testing.T) {
	h, p := startGood(t)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(p.DeclarationRaw(), &m); err != nil || m["instance"] == nil {
		t.Fatalf("raw declaration %s", p.DeclarationRaw())
	}
	in := h.tr.Lines(In)
	if len(in) == 0 || !strings.Contains(in[0], string(p.DeclarationRaw())) {
		t.Fatalf("raw declaration is not the reply's result")
	}
}
