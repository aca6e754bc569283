//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// git runs git locally in dir and returns its trimmed stdout.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=mu-it", "GIT_AUTHOR_EMAIL=it@localhost",
		"GIT_COMMITTER_NAME=mu-it", "GIT_COMMITTER_EMAIL=it@localhost", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// localRepo makes a local repository with one commit and returns it and
// the commit.
func localRepo(t testing.TB, content string) (dir, rev string) {
	t.Helper()
	dir = t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "seed.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "seed.txt")
	git(t, dir, "commit", "-q", "-m", "seed")
	return dir, git(t, dir, "rev-parse", "HEAD")
}

// fetchHead reads the sha FETCH_HEAD names.
func fetchHead(t testing.TB, repo string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, ".git", "FETCH_HEAD"))
	if err != nil {
		t.Fatalf("FETCH_HEAD: %v", err)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		t.Fatalf("FETCH_HEAD is empty")
	}
	return f[0]
}
