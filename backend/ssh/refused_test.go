package ssh

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testsshd"
)

// TestRefusedOptions: every option value that would make the plugin
// connect differently from ssh is a hand-back naming the option, its
// value and the config line (or the --option) that set it; the remedy
// says how to override it for the registration.
func TestRefusedOptions(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	for _, c := range []struct{ line, want string }{
		{"ProxyUseFdpass yes", "ProxyUseFdpass yes"},
		{"ProxyCommand -", "ProxyCommand -"},
		{"BindInterface lo", "BindInterface lo"},
		{"CheckHostIP yes", "CheckHostIP yes"},
		{"NoHostAuthenticationForLocalhost yes", "NoHostAuthenticationForLocalhost yes"},
		{"KnownHostsCommand /bin/true %H", "KnownHostsCommand /bin/true %H"},
		{"RevokedHostKeys /etc/ssh/revoked", "RevokedHostKeys /etc/ssh/revoked"},
		{"PubkeyAuthentication no", "PubkeyAuthentication false"},
		{"PKCS11Provider /usr/lib/opensc-pkcs11.so", "PKCS11Provider /usr/lib/opensc-pkcs11.so"},
		{"Ciphers aes256-cbc", "Ciphers aes256-cbc"},
		{"KexAlgorithms sntrup761x25519-sha512@openssh.com", "KexAlgorithms sntrup761x25519-sha512@openssh.com"},
		{"HostKeyAlgorithms sk-ssh-ed25519@openssh.com", "HostKeyAlgorithms sk-ssh-ed25519@openssh.com"},
		{"MACs umac-128-etm@openssh.com", "MACs umac-128-etm@openssh.com"},
	} {
		name := strings.Fields(c.line)[0]
		t.Run(name, func(t *testing.T) {
			// A comment and a blank line first: the line number must be the option's.
			cfg := testsshd.WriteConfig(t, "# mu test\n\n"+s.HostBlock("box")+"  "+c.line+"\n")
			line := strings.Count(s.HostBlock("box"), "\n") + 3
			expectHuman(t, Config{SSHConfig: cfg}, fmt.Sprintf("ssh_config option %s (%s line %d) is not supported", c.want, cfg, line), "--option "+name+"=")
			// The same through --option: named as the flag.
			opt := strings.Replace(c.line, " ", "=", 1)
			expectHuman(t, Config{SSHConfig: s.Config, Options: []string{opt}}, "(--option "+opt+")")
		})
	}
}

// TestOptionOverride: --option wins over the config, as ssh -o does, so
// the remedy's override works; jump hosts do not get it (ssh -J passes
// no -o to them).
func TestOptionOverride(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	cfg := testsshd.WriteConfig(t, s.HostBlock("box")+"  CheckHostIP yes\n")
	expectOK(t, Config{SSHConfig: cfg, Options: []string{"CheckHostIP=no"}})
	// An --option that changes where to connect.
	bad := testsshd.WriteConfig(t, strings.Replace(s.HostBlock("box"), fmt.Sprintf("Port %d", s.Port), "Port 1", 1))
	expectOK(t, Config{SSHConfig: bad, Options: []string{fmt.Sprintf("Port %d", s.Port)}})
}
