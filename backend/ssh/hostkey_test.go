package ssh

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/mu-org/mu-plugins/internal/sshclient"
	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/panes"
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
	d, _ := inproc(t, cfg)
	_, r := d.exec("box", "true", ".", 20*time.Second)
	if r == nil {
		t.Fatal("connected; want a refusal")
	}
	if r.Kind != "human" {
		t.Fatalf("kind %q (%s), want human", r.Kind, r.Message)
	}
	if !strings.Contains(r.Message, inMsg) {
		t.Errorf("message %q lacks %q", r.Message, inMsg)
	}
	for _, want := range inRemedy {
		if !strings.Contains(r.Remedy, want) {
			t.Errorf("remedy %q lacks %q", r.Remedy, want)
		}
	}
}

func expectOK(t *testing.T, cfg Config) {
	t.Helper()
	d, _ := inproc(t, cfg)
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
		// The remedy's ssh command is the registration's: its --config and
		// --known-hosts.
		empty := filepath.Join(t.TempDir(), "kh")
		os.WriteFile(empty, nil, 0o600)
		expectHuman(t, Config{SSHConfig: cfg, KnownHosts: empty}, "not known",
			"`ssh -o StrictHostKeyChecking=ask -o BatchMode=no -F "+cfg+" -o UserKnownHostsFile="+empty+" -o GlobalKnownHostsFile=/dev/null box`")
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
	d, _ := inproc(t, Config{SSHConfig: cfg2})
	_, r := d.exec("box", "true", ".", 20*time.Second)
	if r == nil || r.Kind != "human" {
		t.Fatalf("want a human refusal, got %+v", r)
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

// multiKeyServer is an sshd with ed25519 (its first HostKey), RSA and
// ECDSA host keys.
func multiKeyServer(t *testing.T) *testsshd.Server {
	dir := t.TempDir()
	rsa, ecdsa := filepath.Join(dir, "host_rsa"), filepath.Join(dir, "host_ecdsa")
	testsshd.KeyGen(t, rsa, "rsa", "")
	testsshd.KeyGen(t, ecdsa, "ecdsa", "")
	return testsshd.Start(t, testsshd.Options{Extra: []string{"HostKey " + rsa, "HostKey " + ecdsa}})
}

// TestFirstContactAsSSH: on a host with ed25519, RSA and ECDSA keys and an
// empty known_hosts, the plugin shows the key ssh records (OpenSSH's
// HostKeyAlgorithms order), and suggests ssh-keyscan for that type.
func TestFirstContactAsSSH(t *testing.T) {
	s := multiKeyServer(t)
	sshCfg, sshKH := clientConfig(t, s, "accept-new")
	if out, err := exec.Command("ssh", "-F", sshCfg, "-o", "ControlPath=none", "box", "true").CombinedOutput(); err != nil {
		t.Fatalf("ssh: %v: %s", err, out)
	}
	b, _ := os.ReadFile(sshKH)
	f := strings.Fields(string(b))
	if len(f) != 3 {
		t.Fatalf("ssh recorded %q", b)
	}
	pub := filepath.Join(t.TempDir(), "k.pub")
	os.WriteFile(pub, []byte(f[1]+" "+f[2]+"\n"), 0o600)
	fp, typ := keygenFingerprint(t, pub), sshclient.KeyTypeName(mustParseKey(t, f[1]+" "+f[2]))
	cfg, _ := clientConfig(t, s, "yes")
	expectHuman(t, Config{SSHConfig: cfg}, "not known", fp, "ssh-keyscan -t "+typ+" ")
	if typ != "ed25519" {
		t.Errorf("ssh recorded a %s key; OpenSSH 9.2's default order picks ed25519", typ)
	}
}

func mustParseKey(t *testing.T, line string) gossh.PublicKey {
	k, _, _, _, err := gossh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestAcceptNewAsSSH: accept-new writes the line OpenSSH writes (hashed
// with HashKnownHosts yes), which ssh then trusts, and vice versa.
func TestAcceptNewAsSSH(t *testing.T) {
	s := multiKeyServer(t)
	for _, hashed := range []bool{false, true} {
		t.Run(fmt.Sprintf("hashed=%v", hashed), func(t *testing.T) {
			extra := ""
			if hashed {
				extra = "  HashKnownHosts yes\n"
			}
			cfg, kh := clientConfig(t, s, "accept-new")
			os.WriteFile(cfg, append(mustRead(t, cfg), extra...), 0o600)
			expectOK(t, Config{SSHConfig: cfg})
			plugin := string(mustRead(t, kh))
			sshCfg, sshKH := clientConfig(t, s, "accept-new")
			os.WriteFile(sshCfg, append(mustRead(t, sshCfg), extra...), 0o600)
			if out, err := exec.Command("ssh", "-F", sshCfg, "-o", "ControlPath=none", "box", "true").CombinedOutput(); err != nil {
				t.Fatalf("ssh: %v: %s", err, out)
			}
			openssh := string(mustRead(t, sshKH))
			pf, of := strings.Fields(plugin), strings.Fields(openssh)
			if len(pf) != 3 || len(of) != 3 || pf[1] != of[1] || pf[2] != of[2] || strings.Count(plugin, "\n") != 1 {
				t.Fatalf("the plugin wrote %q, ssh wrote %q", plugin, openssh)
			}
			if hashed != strings.HasPrefix(pf[0], "|1|") || !hashed && pf[0] != of[0] {
				t.Fatalf("host field: the plugin wrote %q, ssh wrote %q", pf[0], of[0])
			}
			// ssh trusts the plugin's line, strictly.
			strict := strings.Replace(string(mustRead(t, cfg)), "StrictHostKeyChecking accept-new", "StrictHostKeyChecking yes", 1)
			os.WriteFile(cfg, []byte(strict), 0o600)
			if out, err := exec.Command("ssh", "-F", cfg, "-o", "ControlPath=none", "box", "true").CombinedOutput(); err != nil {
				t.Fatalf("ssh does not trust the plugin's line: %v: %s", err, out)
			}
		})
	}
}

func mustRead(t *testing.T, f string) []byte {
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHostKeyKnownByAnotherType: known_hosts holds only the RSA key; the
// RSA algorithms go first, as in OpenSSH, and the host is not refused.
func TestHostKeyKnownByAnotherType(t *testing.T) {
	s := multiKeyServer(t)
	out, err := exec.Command("ssh-keyscan", "-t", "rsa", "-p", fmt.Sprint(s.Port), s.Host).Output()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := clientConfig(t, s, "yes", strings.TrimSpace(string(out)))
	expectOK(t, Config{SSHConfig: cfg})
}

// TestHostCertWithPlainKeyKnown: the host presents a certificate that no
// @cert-authority vouches for, but its plain key is known: OpenSSH falls
// back to the plain key, and so does the plugin.
func TestHostCertWithPlainKeyKnown(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{HostCert: true})
	cfg, _ := clientConfig(t, s, "yes", s.KnownHostsLine())
	if out, err := exec.Command("ssh", "-F", cfg, "-o", "ControlPath=none", "box", "true").CombinedOutput(); err != nil {
		t.Fatalf("ssh: %v: %s", err, out)
	}
	expectOK(t, Config{SSHConfig: cfg})
}

// TestRequiredRSASize: a host RSA key below RequiredRSASize is refused, as
// ssh refuses it.
func TestRequiredRSASize(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{HostKeyType: "rsa"})
	cfg, _ := clientConfig(t, s, "yes", s.KnownHostsLine())
	os.WriteFile(cfg, append(mustRead(t, cfg), "  RequiredRSASize 4096\n"...), 0o600)
	if err := exec.Command("ssh", "-F", cfg, "-o", "ControlPath=none", "box", "true").Run(); err == nil {
		t.Fatal("ssh accepted the small key; the premise is wrong")
	}
	expectHuman(t, Config{SSHConfig: cfg}, "below RequiredRSASize 4096")
}

// TestFingerprintHash: FingerprintHash md5 shows MD5 fingerprints.
func TestFingerprintHash(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	cfg, _ := clientConfig(t, s, "yes")
	os.WriteFile(cfg, append(mustRead(t, cfg), "  FingerprintHash md5\n"...), 0o600)
	out, err := exec.Command("ssh-keygen", "-l", "-E", "md5", "-f", s.HostKeyFile+".pub").Output()
	if err != nil {
		t.Fatal(err)
	}
	expectHuman(t, Config{SSHConfig: cfg}, "not known", strings.Fields(string(out))[1])
}

// The unknown host key's remedy works when pasted (issue 26): with
// StrictHostKeyChecking yes (and BatchMode yes), `ssh … box` "and answer
// yes" would refuse without asking; the command printed asks
// (StrictHostKeyChecking=ask, BatchMode=no, first, so they win over the
// config and the registration's -o), and run
// as printed in a terminal, answered yes, it records the key: the plugin
// then connects.
func TestUnknownHostKeyRemedyRuns(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	cfg, _ := clientConfig(t, s, "yes")
	d, _ := inproc(t, Config{SSHConfig: cfg, Options: []string{"StrictHostKeyChecking=yes"}})
	_, r := d.exec("box", "true", ".", 20*time.Second)
	if r == nil || r.Kind != "human" {
		t.Fatalf("unknown host key: %+v, want human", r)
	}
	_, cmd, ok := strings.Cut(r.Remedy, "or run `")
	cmd, _, ok2 := strings.Cut(cmd, "` once and answer yes")
	if !ok || !ok2 {
		t.Fatalf("remedy %q names no command to run", r.Remedy)
	}
	tm := panes.NewPanes(t)
	tm.Open(t, "ask", cmd, nil)
	tm.Shows(t, "ask", "Are you sure you want to continue connecting")
	tm.Run(t, "send-keys", "-t", "=ask:", "yes", "Enter")
	tm.Shows(t, "ask", "[the view exited: 0]")
	expectOK(t, Config{SSHConfig: cfg, Options: []string{"StrictHostKeyChecking=yes"}})
}
