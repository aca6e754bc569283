package ssh

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultInstance(t *testing.T) {
	if got := DefaultInstance("/etc/mu/ssh_config"); got != "ssh:/etc/mu/ssh_config" {
		t.Fatalf("instance %q", got)
	}
	home, _ := os.UserHomeDir()
	if got := DefaultInstance(""); got != "ssh:"+filepath.Join(home, ".ssh/config") {
		t.Fatalf("instance %q", got)
	}
	long := "/" + strings.Repeat("d/", 100) + "c"
	if got := DefaultInstance(long); len(got) > 128 || !strings.HasSuffix(got, "/c") {
		t.Fatalf("instance %q (%d)", got, len(got))
	}
}

func TestGitCommandParsing(t *testing.T) {
	argv, err := gitCommand([]string{"-o", "SendEnv=GIT_PROTOCOL", "-p", "22", "mu-ssh-link", `git-upload-pack 'a b'\''c'\!'d'`})
	if err != nil || strings.Join(argv, "|") != "git-upload-pack|a b'c!d" {
		t.Fatalf("%q %v", argv, err)
	}
	if _, err := gitCommand([]string{"h", "rm -rf /"}); err == nil {
		t.Fatal("a command other than git's must be refused")
	}
	if _, err := gitCommand([]string{"h", "git-upload-pack 'x'; rm -rf /"}); err == nil {
		t.Fatal("trailing text after the path must be refused")
	}
}

func TestConfigCheck(t *testing.T) {
	if err := (Config{SSHConfig: "/nonexistent/ssh_config"}).Check(); err == nil {
		t.Error("a missing --config must refuse to start")
	}
	if err := (Config{MaxSessions: 1}).Check(); err == nil {
		t.Error("--max-sessions 1 leaves no session for stops: must refuse")
	}
	if err := (Config{}).Check(); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
}
