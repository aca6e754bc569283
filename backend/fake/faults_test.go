package fake

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/protocol"
)

func TestParseScenarioRefusesWhatItCannotDo(t *testing.T) {
	bad := map[string]string{
		`{"faults":[{"method":"link.exec","fault":"explode"}]}`:      "unknown fault",
		`{"faults":[{"fault":"delay","ms":5}]}`:                      "method is required",
		`{"faults":[{"method":"x","fault":"error","kind":"maybe"}]}`: "kind",
		`{"faults":[{"method":"x","fault":"reply"}]}`:                "JSON result",
		`{"faults":[{"method":"x","fault":"delay","extra":1}]}`:      "unknown field",
		`{"faults":[{"method":"x","call":-1,"fault":"hang"}]}`:       "call must be",
	}
	for in, want := range bad {
		if _, err := ParseScenario([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want one naming %q", in, err, want)
		}
	}
	s, err := ParseScenario([]byte(`{"faults":[{"fault":"ignore-eof"},{"method":"*","call":2,"fault":"error","kind":"human","remedy":"r"}]}`))
	if err != nil || len(s.Faults) != 2 {
		t.Fatalf("a good scenario: %v", err)
	}
}

func TestFaultsMatchTheNthCall(t *testing.T) {
	s, _ := ParseScenario([]byte(`{"faults":[
		{"method":"link.exec","call":2,"fault":"error","kind":"human","remedy":"plug it in"},
		{"method":"host.status","fault":"crash-after"},
		{"method":"job.status","fault":"reply","result":{"state":"lost","reason":"injected"}}]}`))
	fs := newFaults(s, nil) // no wire fault here: nothing is written
	exited := 0
	fs.exit = func(int) { exited++ }
	ran := 0
	h := func(ctx context.Context, c *protocol.Call) (any, error) { ran++; return "ok", nil }
	exec := fs.wrap("link.exec", h)
	if v, err := exec(context.Background(), &protocol.Call{}); err != nil || v != "ok" {
		t.Fatalf("call 1: %v %v", v, err)
	}
	_, err := exec(context.Background(), &protocol.Call{})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Kind != protocol.Human || pe.Remedy != "plug it in" {
		t.Fatalf("call 2: %v, want the human error with its remedy", err)
	}
	if ran != 1 {
		t.Fatalf("the handler ran %d times; an injected error must make no effect", ran)
	}
	if _, err := fs.wrap("host.status", h)(context.Background(), &protocol.Call{}); err != nil || exited != 1 || ran != 2 {
		t.Fatalf("crash-after: exited=%d ran=%d err=%v: the effect must land, then the process exit", exited, ran, err)
	}
	v, _ := fs.wrap("job.status", h)(context.Background(), &protocol.Call{})
	if !strings.Contains(string(v.(json.RawMessage)), `"lost"`) {
		t.Fatalf("reply fault answered %s", v)
	}
}
