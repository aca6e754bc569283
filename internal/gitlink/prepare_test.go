package gitlink

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrepareScript runs the push-preparation script under each shell the
// backends meet, the two ways they run it (as `sh -c SCRIPT NAME ARGS`,
// and fed on stdin with the arguments as positional parameters), with
// real git: each exit code means what the constants say.
func TestPrepareScript(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is required: %v", err)
	}
	src := t.TempDir()
	gitIn(t, src, "init", "-q")
	gitIn(t, src, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "x")
	rev := strings.TrimSpace(gitIn(t, src, "rev-parse", "HEAD"))

	for _, sh := range shells(t) {
		for _, form := range []string{"argv", "stdin"} {
			t.Run(filepath.Base(sh[0])+"/"+form, func(t *testing.T) {
				home := t.TempDir()
				run := func(repo string) (int, string) {
					var cmd *exec.Cmd
					if form == "argv" {
						cmd = exec.Command(sh[0], append(sh[1:], "-c", PrepareScript, "push-prepare", repo, rev)...)
					} else {
						cmd = exec.Command(sh[0], append(sh[1:], "-s", repo, rev)...)
						cmd.Stdin = strings.NewReader(PrepareScript)
					}
					cmd.Dir = home
					out, err := cmd.CombinedOutput()
					if _, exited := err.(*exec.ExitError); err != nil && !exited {
						t.Fatalf("run: %v", err)
					}
					return cmd.ProcessState.ExitCode(), string(out)
				}
				// Absent (parents too): created, and ready for the push.
				if code, out := run("a/b/repo"); code != PrepareReady || !isRepo(filepath.Join(home, "a/b/repo")) {
					t.Fatalf("absent repo: exit %d %q", code, out)
				}
				// A directory that is not a repository is made one.
				os.MkdirAll(filepath.Join(home, "plain"), 0o755)
				os.WriteFile(filepath.Join(home, "plain", "keep"), []byte("mine"), 0o644)
				if code, out := run("plain"); code != PrepareReady || !isRepo(filepath.Join(home, "plain")) {
					t.Fatalf("plain directory: exit %d %q", code, out)
				}
				if b, _ := os.ReadFile(filepath.Join(home, "plain", "keep")); string(b) != "mine" {
					t.Fatalf("plain directory: its file changed: %q", b)
				}
				// A repository that holds rev: PrepareHasRev, untouched.
				gitIn(t, filepath.Join(home, "a/b/repo"), "fetch", "-q", src, rev)
				before := tree(t, filepath.Join(home, "a/b/repo", ".git"))
				if code, out := run("a/b/repo"); code != PrepareHasRev {
					t.Fatalf("repo holding rev: exit %d %q", code, out)
				}
				if after := tree(t, filepath.Join(home, "a/b/repo", ".git")); after != before {
					t.Fatalf("repo holding rev was touched:\n%s\n%s", before, after)
				}
				// A file in the way: a failure, neither code, and git says why.
				os.WriteFile(filepath.Join(home, "file"), nil, 0o644)
				if code, out := run("file"); code == PrepareReady || code == PrepareHasRev || out == "" {
					t.Fatalf("a file at REPO: exit %d %q", code, out)
				}
			})
		}
	}
}

// shells are the POSIX shells here: dash (/bin/sh on Debian), bash, and
// busybox sh when installed.
func shells(t *testing.T) [][]string {
	out := [][]string{{"/bin/sh"}, {"/bin/bash"}}
	if bb, err := exec.LookPath("busybox"); err == nil {
		out = append(out, []string{bb, "sh"})
	}
	return out
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return string(out)
}

func isRepo(dir string) bool {
	return exec.Command("git", "-C", dir, "rev-parse", "--git-dir").Run() == nil
}

// tree lists dir's files with their sizes and modification times.
func tree(t *testing.T, dir string) string {
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.ModTime().String() + " " + fi.Mode().String() + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
