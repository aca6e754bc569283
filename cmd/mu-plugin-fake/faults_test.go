package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/backend/fake"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/osproc"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

func scenario(t *testing.T, faults string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scenario.json")
	if err := os.WriteFile(path, []byte(`{"faults":[`+faults+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every invalid message the spec names breaks the plugin, under the
// caller's rule for it.
func TestInvalidMessageFaults(t *testing.T) {
	cases := []struct{ fault, method, rule string }{
		{fake.FaultNotJSON, "link.exec", caller.VNotJSON},
		{fake.FaultUnknownField, "link.exec", caller.VUnknownField},
		{fake.FaultOrphanReply, "link.exec", caller.VNoPending},
		{fake.FaultRequestToMu, "link.exec", caller.VRequest},
		{fake.FaultBadNotify, "link.exec", caller.VNotification},
		{fake.FaultLongLine, "link.exec", caller.VLineTooLong},
		{fake.FaultInvalidUTF8, "link.exec", caller.VUTF8},
		{fake.FaultDoubleNotify, "channel.watch", caller.VSecondNotification},
		{fake.FaultEarlyNotify, "channel.watch", caller.VEarlyNotification},
	}
	for _, c := range cases {
		t.Run(c.fault, func(t *testing.T) {
			p := start(t, "--turn-ms", "20", "--scenario", scenario(t, `{"method":"`+c.method+`","fault":"`+c.fault+`"}`))
			if c.method == "channel.watch" {
				a := startJob(t, p, "j1", "a1", spec("ws", "a1"))
				a.send(t, "hi", "m1")
				zero := int64(0)
				if w, err := p.Watch(waitfor.Context(t, time.Minute), protocol.WatchParams{Base: protocol.Base{Target: a.t}, AfterRuns: &zero}, 0); err == nil {
					w.Wait(waitfor.Context(t, time.Minute))
				}
			} else {
				p.Call(waitfor.Context(t, time.Minute), protocol.MethodLinkExec.Name, execP("box", "true", ".", 5000), 0)
			}
			select {
			case <-p.Stopping():
			case <-time.After(20 * time.Second):
				t.Fatalf("the plugin was not broken:\n%s", p.Explain())
			}
			v := p.Violation()
			if v == nil || v.Rule != c.rule {
				t.Fatalf("violation %v, want %s\n%s", v, c.rule, p.Explain())
			}
		})
	}
}

// The same raw lines at startup, before the handshake's answer.
func TestStartupFaultBreaksTheHandshake(t *testing.T) {
	s := scenario(t, `{"method":"initialize","fault":"not-json"}`)
	_, err := caller.Start(waitfor.Context(t, time.Minute), caller.Config{Name: "fake", Argv: []string{plugin(t), "--scenario", s}, Env: []string{markEnv + "=1"}})
	var lr *caller.LoadRefusal
	if !errors.As(err, &lr) {
		t.Fatalf("start with a not-JSON line first: %v, want a load refusal", err)
	}
}

func TestErrorFaultsOfEachKind(t *testing.T) {
	var faults []string
	kinds := []protocol.Kind{protocol.Retryable, protocol.Permanent, protocol.Human, protocol.UnknownOutcome}
	for i, k := range kinds {
		faults = append(faults, fmt.Sprintf(`{"method":"host.acquire","call":%d,"fault":"error","kind":"%s","remedy":"do the thing"}`, i+1, k))
	}
	p := start(t, "--scenario", scenario(t, strings.Join(faults, ",")))
	for _, k := range kinds {
		re := drive.Err(t, p, protocol.MethodHostAcquire, acquireP("k", nil))
		if re == nil || re.Kind != k || (k == protocol.Human && re.Remedy != "do the thing") {
			t.Fatalf("want %s: %+v", k, re)
		}
	}
	// The fifth call has no fault, and no injected error made an effect:
	// this is the first acquire, so its handle is the world's first.
	a := drive.Call(t, p, protocol.MethodHostAcquire, acquireP("k", nil))
	if a.Handle != "host-1" {
		t.Fatalf("handle %s: an injected error made an effect", a.Handle)
	}
}

func TestDelayHangAndReplyFaults(t *testing.T) {
	p := start(t, "--scenario", scenario(t, `{"method":"link.exec","call":1,"fault":"delay","ms":100},
		{"method":"job.status","fault":"reply","result":{"state":"lost","reason":"injected"}},
		{"method":"host.lookup","fault":"reply","result":{"unknown":"the cloud is down"}}`))
	if r := drive.Call(t, p, protocol.MethodLinkExec, execP("box", "echo ok", ".", 5000)); r.Stdout != "ok\n" {
		t.Fatalf("a delayed call: %+v", r)
	}
	if s := drive.Call(t, p, protocol.MethodJobStatus, protocol.Base{Target: agentTarget("box", "ws", "a", "k", "h")}); s.State != protocol.JobLost || s.Reason != "injected" {
		t.Fatalf("reply fault: %+v", s)
	}
	if l := drive.Call(t, p, protocol.MethodHostLookup, protocol.LookupParams{Base: protocol.Base{Target: drive.HostTarget("pool")}, Key: "k"}); l.Unknown != "the cloud is down" {
		t.Fatalf("reply fault: %+v", l)
	}

	// A delay past the call's deadline: the plugin gives up at the deadline
	// (its context ends), so the call fails one way or the other.
	d := start(t, "--scenario", scenario(t, `{"method":"link.exec","fault":"delay","ms":600000}`))
	if _, err := d.Call(waitfor.Context(t, time.Minute), protocol.MethodLinkExec.Name, execP("box", "true", ".", 500), 2*time.Second); err == nil {
		t.Fatal("a call delayed past its deadline succeeded")
	}
	// A hang ignores even $/cancel: the call is unanswered.
	h := start(t, "--scenario", scenario(t, `{"method":"link.exec","fault":"hang"}`))
	_, err := h.Call(waitfor.Context(t, time.Minute), protocol.MethodLinkExec.Name, execP("box", "true", ".", 500), 2*time.Second)
	var re *caller.RemoteError
	if !errors.Is(err, caller.ErrUnanswered) || errors.As(err, &re) {
		t.Fatalf("hang: %v, want unanswered", err)
	}
}

// crash-before: nothing landed (a fenced lookup proves none); crash-after:
// the effect landed (found), though the call had no answer.
func TestCrashBeforeAndAfterTheEffect(t *testing.T) {
	for _, c := range []struct {
		fault string
		found bool
	}{{fake.FaultCrashBefore, false}, {fake.FaultCrashAfter, true}} {
		state := t.TempDir()
		p := start(t, "--state", state, "--scenario", scenario(t, `{"method":"host.acquire","fault":"`+c.fault+`"}`))
		_, err := p.Call(waitfor.Context(t, time.Minute), protocol.MethodHostAcquire.Name, acquireP("k", nil), 0)
		if !errors.Is(err, caller.ErrUnanswered) {
			t.Fatalf("%s: %v, want unanswered", c.fault, err)
		}
		q := start(t, "--state", state)
		l := drive.Call(t, q, protocol.MethodHostLookup, protocol.LookupParams{Base: protocol.Base{Target: drive.HostTarget("pool")}, Key: "k", Fence: true})
		if (l.Found != nil) != c.found || (!c.found && !l.None) {
			t.Fatalf("%s: lookup %s", c.fault, words.JSON(l))
		}
	}
}

func TestCanaryToStderr(t *testing.T) {
	p := start(t, "--scenario", scenario(t, `{"method":"link.exec","fault":"canary-stderr"}`))
	drive.Call(t, p, protocol.MethodLinkExec, execP("box", "true", ".", 5000))
	p.Stop()
	if !strings.Contains(p.Stderr.String(), canary) {
		t.Fatalf("stderr %q does not hold the canary", p.Stderr.String())
	}
}

func TestEscapeGroup(t *testing.T) {
	p := start(t, "--scenario", scenario(t, `{"method":"link.exec","fault":"escape-group"}`))
	drive.Call(t, p, protocol.MethodLinkExec, execP("box", "true", ".", 5000))
	pgid := p.Pgid()
	var escaped []int
	waitfor.Poll(waitfor.Patience, func() bool { escaped = outsiders(pgid); return len(escaped) > 0 })
	for _, pid := range escaped {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if len(escaped) == 0 {
		t.Fatal("no process carrying the plugin's environment runs outside its group")
	}
	rep := p.Stop()
	if !rep.GroupEmpty {
		t.Fatalf("the group itself was left: %+v", rep)
	}
}

// outsiders lists processes holding this test's canary in their environment
// whose process group is not pgid.
func outsiders(pgid int) []int {
	var out []int
	for _, pid := range osproc.Procs(func(kv string) bool { return kv == "MU_PLUGIN_CANARY="+canary }) {
		if g, err := syscall.Getpgid(pid); err == nil && g != pgid {
			out = append(out, pid)
		}
	}
	return out
}

func TestIgnoreEOF(t *testing.T) {
	p := start(t, "--scenario", scenario(t, `{"fault":"ignore-eof"}`))
	drive.Call(t, p, protocol.MethodLinkExec, execP("box", "true", ".", 5000))
	rep := p.Stop()
	if rep.Graceful || rep.Killed < 1 {
		t.Fatalf("a plugin that ignores EOF left by itself: %+v", rep)
	}
	q := start(t)
	if rep := q.Stop(); !rep.Graceful {
		t.Fatalf("without the fault the plugin must leave by itself on EOF: %+v", rep)
	}
}
