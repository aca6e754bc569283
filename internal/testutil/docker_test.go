package testutil

import (
	"context"
	"strings"
	"testing"
)

// DockerCLI returns the CLI's trimmed stdout, or an error naming the
// command with its stderr (the client alone answers both).
func TestDockerCLI(t *testing.T) {
	out, err := DockerCLI(context.Background(), "version", "--format", "<{{.Client.Os}}>")
	if err != nil || out != "<linux>" {
		t.Fatalf("docker version: %q %v", out, err)
	}
	_, err = DockerCLI(context.Background(), "no-such-command")
	if err == nil || !strings.Contains(err.Error(), "docker no-such-command: exit status 1: ") || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("an unknown command: %v", err)
	}
}
