package gitlink

import (
	"encoding/json"
	"testing"

	"github.com/mu-org/mu-plugins/protocol"
)

func TestSteps(t *testing.T) {
	s := NewSteps("a", "b", "c", "d")
	if b, _ := json.Marshal(s.List()); string(b) != "[]" {
		t.Fatalf("an empty phase encodes as %s, want []", b)
	}
	s.Pass("a", "fine")
	got := s.FailRest("b", "broken")
	want := []protocol.Step{
		{Step: "a", OK: protocol.StepPassed, Detail: "fine"},
		{Step: "b", OK: protocol.StepFailed, Detail: "broken"},
		{Step: "c", OK: protocol.StepSkipped, Detail: "skipped: b failed"},
		{Step: "d", OK: protocol.StepSkipped, Detail: "skipped: b failed"},
	}
	if !sameSteps(got, want) {
		t.Fatalf("FailRest: %+v, want %+v", got, want)
	}

	s = NewSteps("a", "b", "c")
	s.Warn("a", "old")
	s.Fail("b", "no image") // the phase goes on
	got = s.SkipRest("no container")
	want = []protocol.Step{
		{Step: "a", OK: protocol.StepWarn, Detail: "old"},
		{Step: "b", OK: protocol.StepFailed, Detail: "no image"},
		{Step: "c", OK: protocol.StepSkipped, Detail: "no container"},
	}
	if !sameSteps(got, want) {
		t.Fatalf("Fail then SkipRest: %+v, want %+v", got, want)
	}
	// Nothing left to skip, and no order at all: nothing is added.
	if n := len(s.SkipRest("again")); n != 3 {
		t.Fatalf("SkipRest past the order added steps: %d", n)
	}
	u := NewSteps()
	u.Pass("reach", "ok")
	if n := len(u.SkipRest("x")); n != 1 {
		t.Fatalf("SkipRest without an order added steps: %d", n)
	}
}

func sameSteps(a, b []protocol.Step) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
