package drive

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

func local() caller.Config {
	return caller.Config{Name: "t", Local: &protocol.Options{Name: "t", Version: "1", Instance: "i",
		Seams: protocol.Seams{Link: &protocol.LinkSeam{Slots: protocol.SlotsSelf, RemoteOnTimeout: protocol.RemoteStopped,
			Quiescence: protocol.QuiescenceProvable, MaxScriptBytes: 1024, Checks: []string{}}},
		Handlers: map[string]protocol.Handler{
			protocol.MethodLinkExec.Name: func(ctx context.Context, c *protocol.Call) (any, error) {
				var p protocol.ExecParams
				if err := c.Decode(&p); err != nil {
					return nil, err
				}
				if p.Script == "fail" {
					return nil, protocol.HumanError("do it by hand", "failed")
				}
				// The deadline it got tells the budget the call had.
				left := time.Until(time.UnixMilli(p.Deadline)).Round(time.Minute)
				return protocol.ExecResult{ExitCode: new(int), Stdout: fmt.Sprint(left)}, nil
			},
		}}}
}

func exec(script string) protocol.ExecParams {
	return protocol.ExecParams{Base: protocol.Base{Target: protocol.Target{Host: protocol.HostRef{Name: "h"}}}, Script: script, Cwd: ".", TimeoutMs: 1000}
}

func TestCallErrBudget(t *testing.T) {
	p := Start(t, local())
	if r := Call(t, p, protocol.MethodLinkExec, exec("x")); r.Stdout != "0s" {
		t.Fatalf("the default budget: %s left", r.Stdout)
	}
	p.Budget = 10 * time.Minute
	if r := Call(t, p, protocol.MethodLinkExec, exec("x")); r.Stdout != "10m0s" {
		t.Fatalf("Budget 10m: %s left", r.Stdout)
	}
	if re := Err(t, p, protocol.MethodLinkExec, exec("fail")); re == nil || re.Kind != protocol.Human || re.Remedy != "do it by hand" {
		t.Fatalf("Err: %v", re)
	}
	if re := Err(t, p, protocol.MethodLinkExec, exec("x")); re != nil {
		t.Fatalf("Err on success: %v", re)
	}
	if r, re := Try(t, p, protocol.MethodLinkExec, exec("y")); re != nil || r.Stdout != "10m0s" {
		t.Fatalf("Try on success: %+v %v", r, re)
	}
	if r, re := Try(t, p, protocol.MethodLinkExec, exec("fail")); re == nil || re.Kind != protocol.Human || r.Stdout != "" {
		t.Fatalf("Try on an error reply: %+v %v", r, re)
	}
	if len(p.Wire.Lines(caller.Out)) != 7 || !strings.Contains(p.Explain(), "in {") {
		t.Fatalf("the wire: %s", p.Explain())
	}
}

func TestRawExpect(t *testing.T) {
	r := StartRaw(t, local())
	r.Send(`{"jsonrpc":"2.0","id":"a","method":"nope"}`)
	r.Expect(`{"jsonrpc":"2.0","id":"a","error":{"code":-32002,"message":"nope before initialize","data":{"kind":"permanent"}}}`)
}

// recTB records what would fail a test.
type recTB struct {
	testing.TB
	errs []string
}

func (r *recTB) Helper()                      {}
func (r *recTB) Errorf(f string, args ...any) { r.errs = append(r.errs, fmt.Sprintf(f, args...)) }

// A plugin's race report, panic or fatal error fails the test; its log
// lines that only mention one do not.
func TestCheckStderr(t *testing.T) {
	for _, c := range []struct {
		stderr string
		fails  bool
	}{
		{"level=INFO msg=ok\n", false},
		{"level=INFO msg=\"no panic: all fine\"\n", false},
		{"==================\nWARNING: DATA RACE\nWrite at 0x00c000\n", true},
		{"panic: runtime error: index out of range\n\ngoroutine 1", true},
		{"fatal error: concurrent map writes\n", true},
	} {
		r := &recTB{TB: t}
		checkStderr(r, "t", c.stderr)
		if (len(r.errs) > 0) != c.fails {
			t.Errorf("%q: errors %q, want failing %v", c.stderr, r.errs, c.fails)
		}
	}
}
