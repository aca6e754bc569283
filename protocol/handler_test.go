package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Serve decodes the params strictly before the backend's function runs:
// a good call reaches it with every field; an unknown field, a wrong type or
// no params at all is a permanent error naming the method, and the function
// never runs.
func TestServeDecodesStrictly(t *testing.T) {
	var got ExecParams
	ran := 0
	h := MethodLinkExec.Serve(func(ctx context.Context, c *Call, p ExecParams) (ExecResult, error) {
		ran++
		got = p
		return ExecResult{Stdout: "ran " + c.Method}, nil
	}).h
	call := func(params string) (any, error) {
		c := &Call{Method: MethodLinkExec.Name}
		if params != "" {
			c.Params = json.RawMessage(params)
		}
		return h(context.Background(), c)
	}
	v, err := call(`{"deadline":7,"target":{"host":{"name":"h"}},"script":"true","cwd":".","timeoutMs":5}`)
	if r, ok := v.(ExecResult); err != nil || !ok || r.Stdout != "ran link.exec" {
		t.Fatalf("a good call: %v, %v", v, err)
	}
	if got.Deadline != 7 || got.Target.Host.Name != "h" || got.Script != "true" || got.Cwd != "." || got.TimeoutMs != 5 {
		t.Fatalf("decoded %+v", got)
	}
	for params, want := range map[string]string{
		`{"deadline":7,"target":{"host":{"name":"h"}},"script":"true","extra":1}`: `unknown field "extra"`,
		`{"deadline":7,"target":{"host":{"name":"h"}},"script":5}`:                "cannot unmarshal number",
		``: "params are required",
	} {
		_, err := call(params)
		var pe *Error
		if !errors.As(err, &pe) || pe.Kind != Permanent || !strings.HasPrefix(pe.Message, "link.exec: ") || !strings.Contains(pe.Message, want) {
			t.Errorf("params %q: %v, want a permanent error naming link.exec and %q", params, err, want)
		}
	}
	if ran != 1 {
		t.Fatalf("the function ran %d times; only the good call may reach it", ran)
	}
}
