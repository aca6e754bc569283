package tmuxjob_test

import (
	"testing"

	"github.com/mu-org/mu-plugins/protocol"
)

// The harness's state reaches a reading as it wrote it, whatever its
// values hold (backslashes, printf directives, spaces at either end, a key
// line's own look, no newline at the end of the file): the scripts print
// it line by line with builtins (lib.sh: saystate).
func TestStateReadAsWritten(t *testing.T) {
	h := newHost(t)
	key := "sl"
	h.startBare(t, key)
	pending := `  a \\ back\slash, %s %d %%, S state 1, "quoted" \n  `
	h.writeState(t, key, "inc=sl1\nstate=blocked\nsince=5\nruns=2\ncursor=0\npending="+pending)
	r := h.reading(t, key)
	want := protocol.Reading{State: protocol.TurnBlocked, Since: 5, Runs: 2, Incarnation: "sl1", Pending: pending}
	if r != want {
		t.Fatalf("reading %+v, want %+v", r, want)
	}
}
