package testimage

import (
	"os/exec"
	"strings"
	"testing"
)

func TestEnsureGivesARunnableImage(t *testing.T) {
	name := Ensure(t)
	out, err := exec.Command("docker", "run", "--rm", "--init", "--label", Label+"=1", name,
		"sh", "-c", "id -un; git --version; tmux -V; for c in sshd ps timeout; do command -v $c; done").CombinedOutput()
	if err != nil {
		t.Fatalf("docker run %s: %v\n%s", name, err, out)
	}
	for _, want := range []string{"mu\n", "git version", "tmux", "/usr/sbin/sshd", "ps", "timeout"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("image lacks %q; got:\n%s", want, out)
		}
	}
	lbl, err := exec.Command("docker", "image", "inspect", "-f", "{{index .Config.Labels \""+Label+"\"}}", name).Output()
	if err != nil || strings.TrimSpace(string(lbl)) != "1" {
		t.Errorf("image not labelled %s=1: %q %v", Label, lbl, err)
	}
}

func TestUnreachableEngineFailsWithAClearMessage(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	err := ensure()
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("ensure with no Engine: %v, want an 'unreachable' failure", err)
	}
}
