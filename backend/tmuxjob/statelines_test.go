package tmuxjob_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil"
	"github.com/mu-org/mu-plugins/protocol"
)

// The harness's state reaches a reading as it wrote it, whatever its
// values hold (backslashes, printf directives, spaces at either end, a key
// line's own look, no newline at the end of the file): the scripts print
// it line by line with builtins (lib.sh: saystate).
func TestStateReadAsWritten(t *testing.T) {
	h := newHost(t)
	ctx := testutil.Context(t, 2*time.Minute)
	key := "sl"
	if _, err := h.jobs.Start(ctx, protocol.JobStartParams{Base: base(key), Key: key, Spec: spec("exec sleep 1000")}); err != nil {
		t.Fatal(err)
	}
	pending := `  a \\ back\slash, %s %d %%, S state 1, "quoted" \n  `
	state := "inc=sl1\nstate=blocked\nsince=5\nruns=2\ncursor=0\npending=" + pending
	out := filepath.Join(h.jobs.ChannelDir(key), "out")
	if err := os.WriteFile(filepath.Join(out, "tmp.state"), []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(out, "tmp.state"), filepath.Join(out, "state")); err != nil {
		t.Fatal(err)
	}
	r := h.reading(t, key)
	want := protocol.Reading{State: protocol.TurnBlocked, Since: 5, Runs: 2, Incarnation: "sl1", Pending: pending}
	if r != want {
		t.Fatalf("reading %+v, want %+v", r, want)
	}
}
