// Package gitrepo is git for tests: git run with a test identity and no
// system config (Git), and a repository made with given commits (Repo).
package gitrepo

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Git runs git in dir, with a test identity (author and committer "t")
// and no system config, and returns its trimmed stdout; a failure fails
// the test with git's stderr.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@localhost",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@localhost", "GIT_CONFIG_NOSYSTEM=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// Repo makes dir (created if need be) a git repository on branch main
// with one commit per content, each the file f holding it (commit
// messages c0, c1, ...), and returns dir and HEAD: a local repository
// for link.push.
func Repo(t testing.TB, dir string, contents ...string) (string, string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "-q", "-b", "main")
	for i, c := range contents {
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		Git(t, dir, "add", "f")
		Git(t, dir, "commit", "-q", "-m", "c"+strconv.Itoa(i))
	}
	return dir, Git(t, dir, "rev-parse", "HEAD")
}
