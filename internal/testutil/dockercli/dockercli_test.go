package dockercli

import (
	"context"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/tier"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
)

// DockerCLI returns the CLI's trimmed stdout, or an error naming the
// command with its stderr (the client alone answers both).
func TestDockerCLI(t *testing.T) {
	tier.Need(t, "docker")
	out, err := DockerCLI(context.Background(), "version", "--format", "<{{.Client.Os}}>")
	if err != nil || out != "<linux>" {
		t.Fatalf("docker version: %q %v", out, err)
	}
	_, err = DockerCLI(context.Background(), "no-such-command")
	if err == nil || !strings.Contains(err.Error(), "docker no-such-command: exit status 1: ") || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("an unknown command: %v", err)
	}
}

// DockerLabelled lists nothing for a label no container carries, and
// says when the Engine cannot be asked.
func TestDockerLabelled(t *testing.T) {
	tier.Need(t, "docker")
	ids, err := DockerLabelled(context.Background(), "org.mu-plugins.none="+words.RandHex(6), "org.mu-plugins.test")
	if err != nil || len(ids) != 0 {
		t.Fatalf("an unused label: %v %v", ids, err)
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	if ids, err := DockerLabelled(context.Background(), "org.mu-plugins.test"); err == nil || !strings.Contains(err.Error(), "docker ps -aq --no-trunc --filter label=org.mu-plugins.test") {
		t.Fatalf("an Engine that is not there: %v %v", ids, err)
	}
}
