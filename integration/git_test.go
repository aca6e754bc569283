//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil"
)

// localRepo makes a local repository with one commit and returns it and
// the commit.
func localRepo(t testing.TB, content string) (dir, rev string) {
	t.Helper()
	dir = t.TempDir()
	testutil.Git(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "seed.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, "add", "seed.txt")
	testutil.Git(t, dir, "commit", "-q", "-m", "seed")
	return dir, testutil.Git(t, dir, "rev-parse", "HEAD")
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
