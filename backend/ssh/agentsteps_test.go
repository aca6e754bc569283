package ssh

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// pathWithout is a directory of links to every program in /usr/bin but
// the ones named: a PATH for a host that lacks them.
func pathWithout(t *testing.T, missing ...string) string {
	dir, err := os.MkdirTemp("", "mu-path-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/usr/bin")
	if err != nil {
		t.Fatal(err)
	}
	skip := map[string]bool{}
	for _, m := range missing {
		skip[m] = true
	}
	for _, e := range ents {
		if !skip[e.Name()] {
			if err := os.Symlink(filepath.Join("/usr/bin", e.Name()), filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// A host whose PATH lacks tmux and flock: the agent phase fails the tmux
// and tools steps, each remedy naming the package to install, and
// link.checkSteps and job.checkSteps answer the same steps. The state root
// still passes.
func TestAgentStepsMissingTools(t *testing.T) {
	ctx := waitfor.Context(t, 2*time.Minute)
	s := testsshd.Start(t, testsshd.Options{Extra: []string{"SetEnv PATH=" + pathWithout(t, "tmux", "flock")}})
	root := newKey("mu-jobs-test")
	t.Cleanup(func() { os.RemoveAll(filepath.Join(s.Home, root)) })
	p := startJobsPlugin(t, s, root)
	params := protocol.CheckStepsParams{Base: protocol.Base{Target: protocol.Target{Host: protocol.HostRef{Name: s.Alias}}}, Phase: protocol.PhaseAgent}
	job, err := caller.Invoke(ctx, p, protocol.MethodJobCheckSteps, params)
	if err != nil || len(job) != 6 {
		t.Fatalf("job.checkSteps: %+v %v", job, err)
	}
	link, err := caller.Invoke(ctx, p, protocol.MethodLinkCheckSteps, params)
	if err != nil {
		t.Fatalf("link.checkSteps: %v", err)
	}
	if !reflect.DeepEqual(link, job) {
		t.Fatalf("link.checkSteps' agent steps differ from job.checkSteps':\n%+v\n%+v", link, job)
	}
	want := []struct {
		step string
		ok   protocol.StepOK
		has  string
	}{
		{"tmux", protocol.StepFailed, "apt-get install tmux"},
		{"tools", protocol.StepFailed, "util-linux"},
		{"state-root", protocol.StepPassed, ""},
	}
	for i, w := range want {
		if s := job[i]; s.Step != w.step || s.OK != w.ok || !strings.Contains(s.Detail, w.has) {
			t.Errorf("step %d: %+v, want %s %v with %q", i, s, w.step, w.ok, w.has)
		}
	}
	if !strings.Contains(job[1].Detail, "flock") {
		t.Errorf("the tools step does not name flock: %+v", job[1])
	}
}
