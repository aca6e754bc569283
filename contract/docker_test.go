package contract

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil/programs"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
)

// TestDockerPlugin runs the suite's link, host and process checks against
// mu-plugin-docker on the real Engine: a provider, whose link runs on the
// hosts the suite acquires; and channel/after-runs on its tmux channel, its
// job running the test agent. Every check, jobs and channel included, runs
// in backend/docker/contract_test.go.
func TestDockerPlugin(t *testing.T) {
	t.Parallel() // its own run id and containers: waits beside the others
	image := testimage.Ensure(t)
	bin := programs.Build(t, "github.com/mu-org/mu-plugins/cmd/mu-plugin-docker")
	rep := run(t, Options{Argv: []string{bin, "--image", image, "--label", testimage.Label + "=1"}, JobCmd: string(agent.Script),
		Run: `^(registration|handshake|wire|process|link|host)/|^secrets/|^channel/after-runs$`})
	t.Cleanup(func() { removeContainers(t, rep.RunID) })
	passesAll(t, rep)
	for _, name := range []string{"host/acquire", "link/exec-timeout", "link/exec-timeout-remote", "link/fetch", "link/push", "process/eof-exit", "process/group", "channel/after-runs"} {
		if r := status(t, rep, name); r.Status != Pass {
			t.Errorf("%s %s: %s", name, r.Status, r.Reason)
		}
	}
	t.Logf("the suite against mu-plugin-docker: %s in %s%s", rep.Summary(), rep.Elapsed.Round(time.Millisecond), rep.Slowest())
}

// removeContainers removes what the run left on the Engine: a fenced key's
// marker, by design permanent.
func removeContainers(t *testing.T, runID string) {
	out, err := exec.Command("docker", "ps", "-a", "--format", `{{.ID}} {{.Label "org.mu-plugins.key"}}`).Output()
	if err != nil {
		t.Errorf("docker ps: %v", err)
		return
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, key, _ := strings.Cut(l, " ")
		if runID != "" && strings.Contains(key, "-"+runID+"-") {
			if b, err := exec.Command("docker", "rm", "-f", id).CombinedOutput(); err != nil {
				t.Errorf("docker rm %s: %v: %s", id, err, b)
			}
		}
	}
}
