package gitrepo

import (
	"fmt"
	"path/filepath"
	"testing"
)

func TestGit(t *testing.T) {
	dir := t.TempDir()
	Git(t, dir, "init", "-q")
	Git(t, dir, "commit", "-q", "--allow-empty", "-m", "x")
	if who := Git(t, dir, "log", "-1", "--format=%an <%ae>"); who != "t <t@localhost>" {
		t.Fatalf("author %q", who)
	}
}

// Repo makes a repository on main with one commit per content, in a
// directory it creates (a path with a space too).
func TestRepo(t *testing.T) {
	dir, rev := Repo(t, filepath.Join(t.TempDir(), "a repo"), "x", "xx", "xxx")
	if head := Git(t, dir, "rev-parse", "main"); head != rev {
		t.Fatalf("main is %s, HEAD %s", head, rev)
	}
	if log := Git(t, dir, "log", "--format=%s"); log != "c2\nc1\nc0" {
		t.Fatalf("log %q", log)
	}
	for i, want := range []string{"xxx", "xx", "x"} {
		if got := Git(t, dir, "show", fmt.Sprintf("HEAD~%d:f", i)); got != want {
			t.Errorf("HEAD~%d:f is %q, want %q", i, got, want)
		}
	}
}
