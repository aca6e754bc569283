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

// agentOnlyKey is a key held only by an agent: the server authorizes it,
// no file of it is configured.
func agentOnlyKey(t *testing.T, s *testsshd.Server) string {
	k := filepath.Join(t.TempDir(), "agent_key")
	authorize(t, s, testsshd.KeyGen(t, k, "ed25519", ""))
	return k
}

// TestIdentityAgent: the agent OpenSSH would use is the one the plugin
// uses: IdentityAgent's socket (a path, ${VAR}, $VAR, SSH_AUTH_SOCK), none
// at all with IdentityAgent none.
func TestIdentityAgent(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	key := agentOnlyKey(t, s)
	sock := testsshd.Agent(t, key)
	other := testsshd.Agent(t) // an empty agent behind SSH_AUTH_SOCK
	base := strings.Replace(s.HostBlock("box"), "IdentitiesOnly yes", "IdentitiesOnly no", 1)
	base = strings.Replace(base, "IdentityFile "+s.UserKey, "IdentityFile "+filepath.Join(t.TempDir(), "none"), 1)
	t.Setenv("SSH_AUTH_SOCK", other)
	t.Setenv("MU_AGENT_DIR", filepath.Dir(sock))
	t.Setenv("MU_AGENT_SOCK", sock)

	for _, c := range []struct{ name, line string }{
		{"path", "IdentityAgent " + sock},
		{"dollar-brace", "IdentityAgent ${MU_AGENT_DIR}/agent.sock"},
		{"dollar", "IdentityAgent $MU_AGENT_SOCK"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testsshd.WriteConfig(t, base+"  "+c.line+"\n")
			if out, err := exec.Command("ssh", "-F", cfg, "-o", "ControlPath=none", "box", "true").CombinedOutput(); err != nil {
				t.Fatalf("ssh: %v: %s", err, out)
			}
			expectOK(t, Config{SSHConfig: cfg})
		})
	}
	t.Run("SSH_AUTH_SOCK", func(t *testing.T) {
		t.Setenv("SSH_AUTH_SOCK", sock)
		expectOK(t, Config{SSHConfig: testsshd.WriteConfig(t, base+"  IdentityAgent SSH_AUTH_SOCK\n")})
	})
	t.Run("none", func(t *testing.T) {
		t.Setenv("SSH_AUTH_SOCK", sock)
		cfg := testsshd.WriteConfig(t, base+"  IdentityAgent none\n")
		if exec.Command("ssh", "-F", cfg, "-o", "ControlPath=none", "box", "true").Run() == nil {
			t.Fatal("ssh used the agent despite IdentityAgent none; the premise is wrong")
		}
		expectHuman(t, Config{SSHConfig: cfg}, "no SSH key", "none (IdentityAgent none)")
	})
	t.Run("unreachable", func(t *testing.T) {
		// A path from the environment is named as written, never expanded.
		t.Setenv("MU_AGENT_DIR", filepath.Join(t.TempDir(), "gone"))
		cfg := testsshd.WriteConfig(t, base+"  IdentityAgent ${MU_AGENT_DIR}/agent.sock\n")
		d, _ := inproc(t, Config{SSHConfig: cfg})
		_, r := d.exec("box", "true", ".", 20*time.Second)
		if r == nil || !strings.Contains(r.Message, "cannot reach the agent at IdentityAgent ${MU_AGENT_DIR}/agent.sock (as written)") {
			t.Fatalf("want the unreachable agent named as written, got %+v", r)
		}
		if strings.Contains(r.Message+r.Remedy, os.Getenv("MU_AGENT_DIR")) {
			t.Fatalf("the error carries the environment's value: %+v", r)
		}
	})
}

// TestAgentKeyByPublicFile: IdentityFile names only a public key whose
// private half lives in the agent (1Password, gpg-agent, a hardware key),
// with IdentitiesOnly yes: ssh offers it through the agent, so does the
// plugin, and no other agent key.
func TestAgentKeyByPublicFile(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	key := agentOnlyKey(t, s)
	stranger := filepath.Join(t.TempDir(), "stranger")
	testsshd.KeyGen(t, stranger, "ed25519", "")
	sock := testsshd.Agent(t, stranger, key)
	pubOnly := filepath.Join(t.TempDir(), "id_agent.pub")
	if err := os.WriteFile(pubOnly, mustRead(t, key+".pub"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_AUTH_SOCK", sock)
	cfg := testsshd.WriteConfig(t, strings.Replace(s.HostBlock("box"), "IdentityFile "+s.UserKey, "IdentityFile "+pubOnly, 1))
	if out, err := exec.Command("ssh", "-F", cfg, "-o", "ControlPath=none", "box", "true").CombinedOutput(); err != nil {
		t.Fatalf("ssh: %v: %s", err, out)
	}
	d, _ := inproc(t, Config{SSHConfig: cfg})
	_, ok, detail := stepMap(d.steps("box"))
	if ok["auth"] != "true" || !strings.Contains(detail["auth"], pubOnly) {
		t.Fatalf("auth step %s %q, want the key named by its file %s", ok["auth"], detail["auth"], pubOnly)
	}
}

// TestCertificateFileAgentKey: CertificateFile names a user certificate
// whose key is held by the agent only.
func TestCertificateFileAgentKey(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "user_ca")
	testsshd.KeyGen(t, ca, "ed25519", "")
	os.Chmod(dir, 0o755)
	s := testsshd.Start(t, testsshd.Options{Extra: []string{"TrustedUserCAKeys " + ca + ".pub"}})
	key := filepath.Join(t.TempDir(), "certified")
	testsshd.KeyGen(t, key, "ed25519", "")
	if out, err := exec.Command("ssh-keygen", "-q", "-s", ca, "-I", "mu-test", "-n", s.User, key+".pub").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	cert := filepath.Join(t.TempDir(), "the-cert.pub")
	os.WriteFile(cert, mustRead(t, key+"-cert.pub"), 0o600)
	os.Remove(key + "-cert.pub")
	sock := testsshd.Agent(t, key) // the plain key only
	os.Remove(key)
	t.Setenv("SSH_AUTH_SOCK", sock)
	block := strings.Replace(s.HostBlock("box"), "IdentityFile "+s.UserKey, "CertificateFile "+cert, 1)
	// IdentitiesOnly yes: the agent's key is not listed, so ssh has no
	// private key for the certificate; the plugin must not find one either.
	strict := testsshd.WriteConfig(t, block)
	if exec.Command("ssh", "-F", strict, "-o", "ControlPath=none", "box", "true").Run() == nil {
		t.Fatal("ssh authenticated with IdentitiesOnly yes; the premise is wrong")
	}
	expectHuman(t, Config{SSHConfig: strict}, "no SSH key")
	cfg := testsshd.WriteConfig(t, strings.Replace(block, "IdentitiesOnly yes", "IdentitiesOnly no", 1))
	if out, err := exec.Command("ssh", "-F", cfg, "-o", "ControlPath=none", "box", "true").CombinedOutput(); err != nil {
		t.Fatalf("ssh: %v: %s", err, out)
	}
	expectOK(t, Config{SSHConfig: cfg})
}
