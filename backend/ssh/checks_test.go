package ssh

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/protocol"
)

func (d *driver) steps(host string) []protocol.Step {
	d.t.Helper()
	return drive.Call(d.t, d.Plugin, protocol.MethodLinkCheckSteps, protocol.CheckStepsParams{Base: base(host), Phase: protocol.PhaseReach})
}

func stepMap(steps []protocol.Step) (names []string, ok map[string]string, detail map[string]string) {
	ok, detail = map[string]string{}, map[string]string{}
	for _, s := range steps {
		names = append(names, s.Step)
		ok[s.Step] = s.OK.String()
		detail[s.Step] = s.Detail
	}
	return
}

func TestCheckStepsReach(t *testing.T) {
	s, cfg := server(t, testsshd.Options{})
	d, _ := inproc(t, cfg)
	names, ok, detail := stepMap(d.steps("box"))
	if strings.Join(names, ",") != "resolve,tcp,hostkey,auth,sh,git,home" {
		t.Fatalf("steps %v", names)
	}
	for _, n := range names {
		if ok[n] != "true" {
			t.Errorf("%s: %s %s", n, ok[n], detail[n])
		}
	}
	if !strings.Contains(detail["git"], "git version") || !strings.Contains(detail["home"], s.Home) {
		t.Errorf("details: git %q home %q", detail["git"], detail["home"])
	}
	// The details name the endpoint, the host key's fingerprint and where
	// it is known, and the key that authenticated.
	fp := keygenFingerprint(t, s.HostKeyFile+".pub")
	for step, want := range map[string]string{
		"resolve": fmt.Sprintf("box is %s@%s port %d (ssh -G, %s)", s.User, s.Host, s.Port, s.Config),
		"tcp":     fmt.Sprintf("connected to %s", s.Addr()),
		"hostkey": fmt.Sprintf("ssh-ed25519 %s, verified against known_hosts (%s line 1); reached through %s", fp, s.KnownHosts, s.Addr()),
		"auth":    fmt.Sprintf("authenticated as %s with %s (ED25519 SHA256:", s.User, s.UserKey),
	} {
		if !strings.Contains(detail[step], want) {
			t.Errorf("%s detail %q lacks %q", step, detail[step], want)
		}
	}
}

// TestCheckStepsProxyCommand: through a ProxyCommand the tcp step is
// skipped and says so; resolve names the command.
func TestCheckStepsProxyCommand(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	cfg, _, _ := proxied(t, s, "", fmt.Sprintf("[box.invalid]:%d", s.Port))
	d, _ := inproc(t, Config{SSHConfig: cfg})
	_, ok, detail := stepMap(d.steps("box"))
	if ok["tcp"] != "null" || !strings.Contains(detail["tcp"], "ProxyCommand ("+cfg+" line 12)") || ok["home"] != "true" {
		t.Fatalf("%v %v", ok, detail)
	}
	if !strings.Contains(detail["resolve"], "through ProxyCommand `sh -c") || !strings.Contains(detail["hostkey"], "reached through ProxyCommand `sh -c") {
		t.Errorf("resolve %q hostkey %q", detail["resolve"], detail["hostkey"])
	}
}

// TestCheckStepsRefusedOption: a refused option fails the resolve step
// with the hand-back's words.
func TestCheckStepsRefusedOption(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	cfg := testsshd.WriteConfig(t, s.HostBlock("box")+"  CheckHostIP yes\n")
	d, _ := inproc(t, Config{SSHConfig: cfg})
	_, ok, detail := stepMap(d.steps("box"))
	if ok["resolve"] != "false" || ok["tcp"] != "null" || !strings.Contains(detail["resolve"], "CheckHostIP yes ("+cfg+" line 11)") || !strings.Contains(detail["resolve"], "To fix:") {
		t.Fatalf("%v %v", ok, detail)
	}
}

func TestCheckStepsFailures(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	t.Run("hostkey", func(t *testing.T) {
		cfg, _ := clientConfig(t, s, "yes")
		d, _ := inproc(t, Config{SSHConfig: cfg})
		_, ok, detail := stepMap(d.steps("box"))
		if ok["tcp"] != "true" || ok["hostkey"] != "false" || ok["auth"] != "null" || ok["home"] != "null" {
			t.Fatalf("%v", ok)
		}
		if !strings.Contains(detail["hostkey"], "ssh-keyscan") {
			t.Errorf("hostkey detail says no fix: %q", detail["hostkey"])
		}
	})
	t.Run("auth", func(t *testing.T) {
		cfg := s.WithIdentity(t, filepath.Join(t.TempDir(), "none"))
		d, _ := inproc(t, Config{SSHConfig: cfg})
		_, ok, detail := stepMap(d.steps("box"))
		if ok["hostkey"] != "true" || ok["auth"] != "false" || ok["sh"] != "null" {
			t.Fatalf("%v", ok)
		}
		// The fix repeats the registration's own --config.
		if !strings.Contains(detail["auth"], "ssh-keygen") || !strings.Contains(detail["auth"], "`ssh-copy-id -F "+cfg+" box`") {
			t.Errorf("auth detail says no fix: %q", detail["auth"])
		}
		if fp := keygenFingerprint(t, s.HostKeyFile+".pub"); !strings.Contains(detail["hostkey"], fp) {
			t.Errorf("hostkey detail %q lacks the fingerprint %s", detail["hostkey"], fp)
		}
	})
	t.Run("tcp", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "c")
		os.WriteFile(cfg, []byte("Host box\n  HostName 127.0.0.1\n  Port 1\n  ConnectTimeout 5\n"), 0o600)
		d, _ := inproc(t, Config{SSHConfig: cfg})
		_, ok, detail := stepMap(d.steps("box"))
		if ok["resolve"] != "true" || ok["tcp"] != "false" || ok["hostkey"] != "null" {
			t.Fatalf("%v", ok)
		}
		if !strings.Contains(detail["tcp"], "Check") {
			t.Errorf("tcp detail says no fix: %q", detail["tcp"])
		}
	})
}
