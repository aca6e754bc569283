package ssh

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
)

// startAgent starts an ssh-agent in the foreground and points SSH_AUTH_SOCK at it.
func startAgent(t *testing.T) string {
	t.Helper()
	sock := testsshd.Agent(t)
	t.Setenv("SSH_AUTH_SOCK", sock)
	return sock
}

func sshAdd(t *testing.T, key, passphrase string) {
	t.Helper()
	askpass := filepath.Join(t.TempDir(), "askpass")
	if err := os.WriteFile(askpass, []byte("#!/bin/sh\necho '"+passphrase+"'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ssh-add", key)
	cmd.Env = append(os.Environ(), "SSH_ASKPASS="+askpass, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=:0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v: %s", err, out)
	}
}

func authorize(t *testing.T, s *testsshd.Server, pub string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(s.Dir, "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(pub + "\n"); err != nil {
		t.Fatal(err)
	}
}

func TestAuth(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	dir := t.TempDir()
	stranger := filepath.Join(dir, "stranger")
	testsshd.KeyGen(t, stranger, "ed25519", "")
	locked := filepath.Join(dir, "locked")
	authorize(t, s, testsshd.KeyGen(t, locked, "ed25519", "sekrit"))
	rsa := filepath.Join(dir, "rsa")
	authorize(t, s, testsshd.KeyGen(t, rsa, "rsa", ""))

	t.Run("refused-key", func(t *testing.T) {
		expectHuman(t, Config{SSHConfig: s.WithIdentity(t, stranger)}, "refused the keys", "ssh-copy-id", "--identity")
	})
	t.Run("no-key", func(t *testing.T) {
		expectHuman(t, Config{SSHConfig: s.WithIdentity(t, filepath.Join(dir, "missing"))}, "no SSH key", "ssh-keygen")
	})
	t.Run("identity-flag", func(t *testing.T) {
		expectOK(t, Config{SSHConfig: s.WithIdentity(t, stranger), Identity: s.UserKey})
	})
	t.Run("rsa-sha2", func(t *testing.T) {
		// OpenSSH 8.8+ refuses SHA-1 ssh-rsa signatures: an RSA key must sign rsa-sha2.
		expectOK(t, Config{SSHConfig: s.WithIdentity(t, rsa)})
	})
	t.Run("passphrase-not-in-agent", func(t *testing.T) {
		t.Setenv("SSH_AUTH_SOCK", "")
		expectHuman(t, Config{SSHConfig: s.WithIdentity(t, locked)}, "passphrase-protected", "ssh-add "+locked)
	})
	t.Run("passphrase-in-agent", func(t *testing.T) {
		startAgent(t)
		sshAdd(t, locked, "sekrit")
		expectOK(t, Config{SSHConfig: s.WithIdentity(t, locked)})
	})
	t.Run("agent-only", func(t *testing.T) {
		startAgent(t)
		sshAdd(t, s.UserKey, "")
		cfg := s.WithIdentity(t, filepath.Join(dir, "missing"))
		cfg2 := filepath.Join(t.TempDir(), "c")
		b, _ := os.ReadFile(cfg)
		os.WriteFile(cfg2, []byte(strings.Replace(string(b), "IdentitiesOnly yes", "IdentitiesOnly no", 1)), 0o600)
		expectOK(t, Config{SSHConfig: cfg2})
	})
	t.Run("agent-keys-before-file-keys-as-ssh", func(t *testing.T) {
		// OpenSSH offers the agent's keys before the IdentityFile keys it
		// does not hold (pubkey_prepare): six refused keys in the agent
		// exhaust MaxAuthTries before the file key, for ssh and for the
		// plugin alike, and IdentitiesOnly yes is the fix for both.
		startAgent(t)
		for i := 0; i < 6; i++ {
			k := filepath.Join(t.TempDir(), "k")
			testsshd.KeyGen(t, k, "ed25519", "")
			sshAdd(t, k, "")
		}
		cfg := s.WithIdentity(t, s.UserKey)
		cfg2 := filepath.Join(t.TempDir(), "c")
		b, _ := os.ReadFile(cfg)
		os.WriteFile(cfg2, []byte(strings.Replace(string(b), "IdentitiesOnly yes", "IdentitiesOnly no", 1)), 0o600)
		if out, err := exec.Command("ssh", "-F", cfg2, "-o", "ControlPath=none", "box", "true").CombinedOutput(); err == nil {
			t.Fatalf("ssh authenticated; the premise is wrong: %s", out)
		}
		expectHuman(t, Config{SSHConfig: cfg2}, "refused the keys", "IdentitiesOnly yes")
		expectOK(t, Config{SSHConfig: cfg}) // IdentitiesOnly yes
	})
}

func TestAuthUserCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "user_ca")
	testsshd.KeyGen(t, ca, "ed25519", "")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := testsshd.Start(t, testsshd.Options{Extra: []string{"TrustedUserCAKeys " + ca + ".pub"}})
	key := filepath.Join(dir, "certified")
	testsshd.KeyGen(t, key, "ed25519", "") // not in authorized_keys
	if out, err := exec.Command("ssh-keygen", "-q", "-s", ca, "-I", "mu-test", "-n", s.User, key+".pub").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	expectOK(t, Config{SSHConfig: s.WithIdentity(t, key)})
	// Without its certificate the same key is refused.
	os.Remove(key + "-cert.pub")
	expectHuman(t, Config{SSHConfig: s.WithIdentity(t, key)}, "refused the keys")
}

// No key to offer: the message names the configured IdentityFile (here
// missing) and says that the agent is empty, and the remedy loads or
// creates that very file (issue 26). Debian's stock GSSAPIAuthentication
// yes is not mentioned without a Kerberos ticket: it could not matter.
func TestNoKeyNamesIdentityFileAndEmptyAgent(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	startAgent(t) // running, and empty
	t.Setenv("KRB5CCNAME", "")
	missing := filepath.Join(t.TempDir(), "id_work")
	cfg := s.WithIdentity(t, missing, "  GSSAPIAuthentication yes")
	d, _ := inproc(t, Config{SSHConfig: cfg})
	_, r := d.exec("box", "true", ".", 20*time.Second)
	if r == nil || r.Kind != "human" {
		t.Fatalf("no key: %+v, want human", r)
	}
	for _, want := range []string{"IdentityFile " + missing, "does not exist", "the agent at $SSH_AUTH_SOCK holds no keys"} {
		if !strings.Contains(r.Message, want) {
			t.Errorf("message %q lacks %q", r.Message, want)
		}
	}
	for _, want := range []string{"ssh-keygen -t ed25519 -f " + missing, "ssh-add " + missing} {
		if !strings.Contains(r.Remedy, want) {
			t.Errorf("remedy %q lacks %q", r.Remedy, want)
		}
	}
	if strings.Contains(r.Message+r.Remedy, "GSSAPI") {
		t.Errorf("GSSAPI named with no Kerberos ticket: %q", r.Message)
	}
}
