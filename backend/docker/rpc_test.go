package docker_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil/dockercli"
	"github.com/mu-org/mu-plugins/internal/testutil/programs"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/testutil/tier"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The tests drive the built plugin binary through caller (testutil/drive),
// as mu does, against the real Docker Engine and the project's test image.

var runID = sandboxtest.RunID() // labels this test binary's containers: org.mu-plugins.testrun

func TestMain(m *testing.M) {
	tier.Main(m, "docker", nil, cleanupRun)
}

// binPath is the plugin binary the tests run, built (with -race when the
// tests run with it) once.
func binPath(t testing.TB) string {
	t.Helper()
	return programs.BuildRace(t, "github.com/mu-org/mu-plugins/cmd/mu-plugin-docker")
}

// cleanupRun removes every container this test binary made.
func cleanupRun() {
	ids := labelled("org.mu-plugins.testrun=" + runID)
	if len(ids) > 0 {
		_ = exec.Command("docker", append([]string{"rm", "-f", "-v"}, ids...)...).Run()
	}
}

// removeNamed removes this test binary's containers whose names hold
// prefix (a test's own, sandboxtest.NewPrefix).
func removeNamed(prefix string) {
	ids, _ := dockercli.DockerCLI(context.Background(), "ps", "-aq", "--no-trunc", "--filter", "name="+prefix, "--filter", "label=org.mu-plugins.testrun="+runID)
	if ids != "" {
		_ = exec.Command("docker", append([]string{"rm", "-f", "-v"}, strings.Fields(ids)...)...).Run()
	}
}

// labelled lists this test binary's containers (any state) with label l
// (none when docker fails).
func labelled(l string) []string {
	ids, _ := dockercli.DockerLabelled(context.Background(), l, "org.mu-plugins.testrun="+runID)
	return ids
}

// plugin is mu-plugin-docker as a test drives it (sandboxtest.Plugin).
type plugin struct {
	*sandboxtest.Plugin
	prefix string
	decl   protocol.InitializeResult
}

// start runs the plugin with a fresh prefix, on the test image.
func start(t testing.TB, args ...string) *plugin {
	t.Helper()
	testimage.Ensure(t)
	return startAt(t, binPath(t), sandboxtest.NewPrefix(), args...)
}

// startOn runs the plugin with prefix (a second invocation of the same
// configuration, or a test that needs no image).
func startOn(t testing.TB, prefix string, args ...string) *plugin {
	t.Helper()
	return startAt(t, binPath(t), prefix, args...)
}

// pluginConfig is how the tests run the plugin registered at path (its
// basename names it): one attempt a call, a handshake may take 30 s (an
// Engine that never answers), and a stop gives it 10 s to exit on stdin's
// EOF.
func pluginConfig(path, prefix string, args ...string) caller.Config {
	argv := append([]string{path, "--prefix", prefix, "--image", testimage.Name, "--label", "org.mu-plugins.test=1",
		"--label", "org.mu-plugins.testrun=" + runID}, args...)
	return caller.Config{Name: strings.TrimPrefix(filepath.Base(path), "mu-plugin-"), Argv: argv,
		SkipParamsCheck: true, Retries: -1, HandshakeTimeout: 30 * time.Second, StopGrace: 10 * time.Second}
}

// startAt starts the plugin registered at path, as mu does (the handshake
// included), and stops it with stdin's EOF when the test ends.
func startAt(t testing.TB, path, prefix string, args ...string) *plugin {
	t.Helper()
	sp := sandboxtest.Start(t, pluginConfig(path, prefix, args...), 2*time.Minute)
	return &plugin{Plugin: sp, prefix: prefix, decl: sp.Declaration()}
}
