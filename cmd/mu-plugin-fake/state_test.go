package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
)

// With --state the world outlives the invocation: a turn sent in one
// settles, on the clock, for the next.
func TestStateSurvivesInvocations(t *testing.T) {
	state := t.TempDir()
	p1 := start(t, "--state", state, "--turn-ms", "100")
	a := startJob(t, p1, "j1", "a1", spec("ws", "a1"))
	a.send(t, "remember me", "m1")
	p1.Stop()

	p2 := start(t, "--state", state, "--turn-ms", "100")
	a.p = p2
	zero := int64(0)
	if n := a.watch(t, &zero); n.Settled == nil || n.Settled.Observation.LastText != "fake: done: remember me" {
		t.Fatalf("the next invocation's watch: %s", n.Params)
	}
	rc := drive.Call(t, p2, protocol.MethodChannelReceipt, protocol.ReceiptParams{Base: protocol.Base{Target: a.t}, MsgID: "m1"})
	if rc.State != protocol.ReceiptAccepted {
		t.Fatalf("receipt in the next invocation: %s", words.JSON(rc))
	}
	if s := drive.Call(t, p2, protocol.MethodJobStatus, protocol.Base{Target: a.t}); s.State != protocol.JobRunning {
		t.Fatalf("job status in the next invocation: %s", words.JSON(s))
	}
}

// Two invocations at once on one --state: every effect of both lands, and
// the file stays whole.
func TestStateTwoInvocationsAtOnce(t *testing.T) {
	state := t.TempDir()
	const n = 25
	ps := []*drive.Plugin{start(t, "--state", state), start(t, "--state", state)}
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func(i int, p *drive.Plugin) {
			defer wg.Done()
			for k := 0; k < n; k++ {
				if _, err := p.Call(waitfor.Context(t, time.Minute), protocol.MethodHostAcquire.Name, acquireP(fmt.Sprintf("p%d-k%d", i, k), nil), 0); err != nil {
					t.Errorf("acquire: %v", err)
				}
			}
		}(i, p)
	}
	wg.Wait()
	ps[0].Stop()
	ps[1].Stop()
	b, err := os.ReadFile(filepath.Join(state, "world.json"))
	if err != nil {
		t.Fatal(err)
	}
	var w struct {
		Hosts map[string]json.RawMessage `json:"hosts"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("world.json is corrupt: %v", err)
	}
	if len(w.Hosts) != 2*n {
		t.Fatalf("%d hosts recorded, want %d: an effect was lost", len(w.Hosts), 2*n)
	}
	p := start(t, "--state", state)
	for i := 0; i < 2; i++ {
		for k := 0; k < n; k++ {
			l := drive.Call(t, p, protocol.MethodHostLookup, protocol.LookupParams{Base: protocol.Base{Target: drive.HostTarget("pool")}, Key: fmt.Sprintf("p%d-k%d", i, k)})
			if l.Found == nil {
				t.Fatalf("p%d-k%d: %s", i, k, words.JSON(l))
			}
		}
	}
}

// The view really runs in a terminal (tmux), stdin from /dev/null as mu
// runs it, and shows the agent's transcript as turns settle.
func TestViewRunsInATerminalAndShowsTheTranscript(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is required for this test (apt-get install tmux): %v", err)
	}
	state := t.TempDir()
	p := start(t, "--state", state, "--turn-ms", "50")
	a := startJob(t, p, "j1", "a1", spec("ws", "a1"))
	a.send(t, "show me in the pane", "m1")

	sock := filepath.Join(t.TempDir(), "tmux.sock")
	session := fmt.Sprintf("fakeview%d", os.Getpid())
	cmd := exec.Command("tmux", "-S", sock, "new-session", "-d", "-s", session, "-x", "200", "-y", "50",
		"sh", "-c", a.start.View.Command+" </dev/null; echo VIEW-EXITED; sleep 60")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	defer exec.Command("tmux", "-S", sock, "kill-server").Run()
	capture := func() string {
		out, _ := exec.Command("tmux", "-S", sock, "capture-pane", "-p", "-t", "="+session+":").Output()
		return string(out)
	}
	waitFor := func(want string) string {
		var s string
		if !waitfor.Poll(waitfor.Patience, func() bool { s = capture(); return strings.Contains(s, want) }) {
			t.Fatalf("the pane never showed %q:\n%s", want, s)
		}
		return s
	}
	s := waitFor("fake: done: show me in the pane")
	if !strings.Contains(s, "job "+a.start.Handle) || strings.Contains(s, "s3cr3t") {
		t.Fatalf("pane:\n%s", s)
	}
	if !strings.Contains(s, "SECRET_TOKEN") {
		t.Fatalf("the spec's env names are not shown:\n%s", s)
	}
	drive.Call(t, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: a.t}, Key: "j1"})
	waitFor("VIEW-EXITED")
}
