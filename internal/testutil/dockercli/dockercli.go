// Package dockercli runs the docker CLI for tests: Docker (or fail the
// test), DockerCLI (its output and error), DockerLabelled (the containers
// with given labels).
package dockercli

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/tier"
)

// DockerCLI runs the docker CLI, bounded by ctx, and returns its trimmed
// stdout; its error names the command and carries its stderr.
func DockerCLI(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", args...).Output()
	if err != nil {
		var stderr string
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out)), nil
}

// Docker is DockerCLI within two minutes; an error fails the test.
func Docker(t testing.TB, args ...string) string {
	t.Helper()
	tier.Need(t, "docker")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := DockerCLI(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// DockerLabelled lists the containers (any state) carrying every label
// given (each "key=value" or "key"), by full id.
func DockerLabelled(ctx context.Context, labels ...string) ([]string, error) {
	args := []string{"ps", "-aq", "--no-trunc"}
	for _, l := range labels {
		args = append(args, "--filter", "label="+l)
	}
	out, err := DockerCLI(ctx, args...)
	return strings.Fields(out), err
}
