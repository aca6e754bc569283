package sshlink

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
)

// clientConfig writes an ssh_config for s whose known_hosts holds lines,
// with strict set to StrictHostKeyChecking, and returns its path and the
// known_hosts path.
func clientConfig(t *testing.T, s *testsshd.Server, strict string, lines ...string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	body := ""
	if len(lines) > 0 {
		body = strings.Join(lines, "\n") + "\n"
	}
	if err := os.WriteFile(kh, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	block := strings.Replace(s.HostBlock("box"), "UserKnownHostsFile "+s.KnownHosts, "UserKnownHostsFile "+kh, 1)
	block = strings.Replace(block, "StrictHostKeyChecking yes", "StrictHostKeyChecking "+strict, 1)
	cfg := filepath.Join(dir, "ssh_config")
	if err := os.WriteFile(cfg, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, kh
}

func keygenFingerprint(t *testing.T, pubFile string) string {
	out, err := exec.Command("ssh-keygen", "-l", "-E", "sha256", "-f", pubFile).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))[1]
}

// expectHuman runs `true` and wants a human error whose message and remedy
// contain the given texts.
func expectHuman(t *testing.T, cfg Config, inMsg string, inRemedy ...string) {
	t.Helper()
	d, _, _ := inproc(t, cfg)
	_, r := d.exec("box", "true", ".", 20*time.Second)
	if r.Error == nil {
		t.Fatal("connected; want a refusal")
	}
	if r.Error.Data.Kind != "human" {
		t.Fatalf("kind %q (%s), want human", r.Error.Data.Kind, r.Error.Message)
	}
	if !strings.Contains(r.Error.Message, inMsg) {
		t.Errorf("message %q lacks %q", r.Error.Message, inMsg)
	}
	for _, want := range inRemedy {
		if !strings.Contains(r.Error.Data.Remedy, want) {
			t.Errorf("remedy %q lacks %q", r.Error.Data.Remedy, want)
		}
	}
}

func expectOK(t *testing.T, cfg Config) {
	t.Helper()
	d, _, _ := inproc(t, cfg)
	if out := d.mustExec("box", "echo hi"); out != "hi\n" {
		t.Fatalf("stdout %q", out)
	}
}

func TestHostKeys(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	other := testsshd.KeyGen(t, filepath.Join(t.TempDir(), "other"), "ed25519", "")
	fp := keygenFingerprint(t, s.HostKeyFile+".pub")

	t.Run("known", func(t *testing.T) {
		cfg, _ := clientConfig(t, s, "yes", s.KnownHostsLine())
		expectOK(t, Config{SSHConfig: cfg})
	})
	t.Run("unknown", func(t *testing.T) {
		cfg, kh := clientConfig(t, s, "yes")
		expectHuman(t, Config{SSHConfig: cfg}, "not known", fp, "ssh-keyscan", kh)
	})
	t.Run("unknown-ask", func(t *testing.T) {
		cfg, _ := clientConfig(t, s, "ask")
		expectHuman(t, Config{SSHConfig: cfg}, "not known", fp)
	})
	t.Run("changed", func(t *testing.T) {
		cfg, kh := clientConfig(t, s, "yes", s.HostPattern()+" "+other)
		expectHuman(t, Config{SSHConfig: cfg}, "CHANGED", fp, "ssh-keygen -R", kh)
	})
	t.Run("changed-accept-new", func(t *testing.T) {
		cfg, _ := clientConfig(t, s, "accept-new", s.HostPattern()+" "+other)
		expectHuman(t, Config{SSHConfig: cfg}, "CHANGED", fp)
	})
	t.Run("revoked", func(t *testing.T) {
		cfg, _ := clientConfig(t, s, "yes", s.KnownHostsLine(), "@revoked * "+s.HostKeyPub)
		expectHuman(t, Config{SSHConfig: cfg}, "revoked")
	})
	t.Run("hashed", func(t *testing.T) {
		cfg, kh := clientConfig(t, s, "yes", s.KnownHostsLine())
		if out, err := exec.Command("ssh-keygen", "-H", "-f", kh).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		b, _ := os.ReadFile(kh)
		if !strings.HasPrefix(string(b), "|1|") {
			t.Fatalf("known_hosts not hashed: %s", b)
		}
		expectOK(t, Config{SSHConfig: cfg})
	})
	t.Run("port-matters", func(t *testing.T) {
		// A line for the host on port 22 does not vouch for another port.
		cfg, _ := clientConfig(t, s, "yes", s.Host+" "+s.HostKeyPub)
		expectHuman(t, Config{SSHConfig: cfg}, "not known", fp)
	})
	t.Run("known-hosts-flag", func(t *testing.T) {
		cfg, _ := clientConfig(t, s, "yes")
		expectOK(t, Config{SSHConfig: cfg, KnownHosts: s.KnownHosts})
	})
	t.Run("accept-new", func(t *testing.T) {
		cfg, kh := clientConfig(t, s, "accept-new")
		expectOK(t, Config{SSHConfig: cfg})
		b, _ := os.ReadFile(kh)
		if !strings.Contains(string(b), s.HostKeyPub) {
			t.Fatalf("accept-new did not record the key: %q", b)
		}
		expectOK(t, Config{SSHConfig: cfg}) // and it is known from then on
	})
}

func TestHostKeyCertAuthority(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{HostCert: true})
	cfg, _ := clientConfig(t, s, "yes", "@cert-authority "+s.HostPattern()+" "+s.CAPub)
	expectOK(t, Config{SSHConfig: cfg})
	// A CA that did not sign the host's certificate vouches for nothing.
	other := testsshd.KeyGen(t, filepath.Join(t.TempDir(), "ca2"), "ed25519", "")
	cfg2, _ := clientConfig(t, s, "yes", "@cert-authority "+s.HostPattern()+" "+other)
	d, _, _ := inproc(t, Config{SSHConfig: cfg2})
	_, r := d.exec("box", "true", ".", 20*time.Second)
	if r.Error == nil || r.Error.Data.Kind != "human" {
		t.Fatalf("want a human refusal, got %+v", r.Error)
	}
}

// TestHostKeyAlgorithmOrder: a host with RSA, ECDSA and ed25519 keys, known
// by its ed25519 key only, must not read as a key mismatch.
func TestHostKeyAlgorithmOrder(t *testing.T) {
	dir := t.TempDir()
	rsa, ecdsa := filepath.Join(dir, "host_rsa"), filepath.Join(dir, "host_ecdsa")
	testsshd.KeyGen(t, rsa, "rsa", "")
	testsshd.KeyGen(t, ecdsa, "ecdsa", "")
	s := testsshd.Start(t, testsshd.Options{Extra: []string{"HostKey " + rsa, "HostKey " + ecdsa}})
	cfg, _ := clientConfig(t, s, "yes", s.KnownHostsLine()) // the ed25519 key only
	expectOK(t, Config{SSHConfig: cfg})
}
