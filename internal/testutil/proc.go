package testutil

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
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

// RandHex is n random bytes in hex: a name no other test run uses.
func RandHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ShQuote quotes s as one POSIX sh word.
func ShQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

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

// Alive reports whether process pid is alive: it exists and is no zombie.
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state …; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// Procs lists the live processes but this one whose environment holds a
// variable (KEY=VALUE) that match accepts: what a test's runs left.
func Procs(match func(kv string) bool) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !Alive(pid) {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if match(kv) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}
