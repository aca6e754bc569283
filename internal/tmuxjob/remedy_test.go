package tmuxjob_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// Each failing check step names its remedy: the package to install, or the
// backend's own for its root.
func TestCheckStepsNameTheirRemedies(t *testing.T) {
	ctx := waitfor.Context(t, 2*time.Minute)
	// A host whose PATH has none of the tools, and a root no one can make.
	j, err := tmuxjob.New(tmuxjob.LocalRunner{Env: []string{"PATH=/nonexistent", "HOME=/"}},
		tmuxjob.Options{Root: "/proc/mu-jobs", Kind: "tmux", Channel: "c", RootRemedy: "pick another --root"})
	if err != nil {
		t.Fatal(err)
	}
	steps, err := j.CheckSteps(ctx, protocol.PhaseAgent)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]protocol.Step{}
	for _, s := range steps {
		byName[s.Step] = s
	}
	for name, want := range map[string]string{"tmux": "apt-get install tmux", "tools": "coreutils, gawk (or mawk), grep, sed, util-linux",
		"state-root": "pick another --root"} {
		s := byName[name]
		if s.OK != protocol.StepFailed || !strings.Contains(s.Detail, want) {
			t.Errorf("step %s: %+v does not fail naming its remedy %q", name, s, want)
		}
	}
}
