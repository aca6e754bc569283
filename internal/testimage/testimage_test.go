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
}

// The test images carry no label of the project's: an image's labels mark
// every container made from it, and a test mark on a user's host would let
// a test-cleanup command remove it.
func TestImagesCarryNoTestMark(t *testing.T) {
	Ensure(t)
	for _, img := range []string{Name, BaseName} {
		out, err := exec.Command("docker", "image", "inspect", "-f", "{{json .Config.Labels}}", img).Output()
		if err != nil {
			t.Fatalf("docker image inspect %s: %v", img, err)
		}
		if strings.Contains(string(out), "org.mu-plugins") {
			t.Errorf("image %s carries labels %s", img, out)
		}
	}
	out, err := exec.Command("docker", "create", Name).Output()
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(out))
	defer exec.Command("docker", "rm", "-f", id).Run()
	if lbl, _ := exec.Command("docker", "inspect", "-f", "{{json .Config.Labels}}", id).Output(); strings.Contains(string(lbl), "org.mu-plugins") {
		t.Errorf("a container made from %s without labels carries %s", Name, lbl)
	}
}

func TestUnreachableEngineFailsWithAClearMessage(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	err := ensure()
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("ensure with no Engine: %v, want an 'unreachable' failure", err)
	}
}
