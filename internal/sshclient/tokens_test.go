package sshclient

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testsshd"
)

func TestExpandTokens(t *testing.T) {
	t.Setenv("MU_TOKEN_TEST", "envval")
	v := tokenValues{host: "h.example", hostArg: "box", port: 2222, user: "alice", keyAlias: "kalias"}
	for _, c := range []struct {
		in, allowed string
		dollar      bool
		want, err   string
	}{
		{in: "nc %h %p", allowed: proxyTokens, want: "nc h.example 2222"},
		{in: "%r@%n %k 100%%", allowed: proxyTokens, want: "alice@box kalias 100%"},
		{in: "%%h", allowed: proxyTokens, want: "%h"},
		{in: "nc %h %x", allowed: proxyTokens, err: "unknown token %x"},
		{in: "nc %d", allowed: proxyTokens, err: "unknown token %d"}, // ProxyCommand takes no %d
		{in: "trailing %", allowed: proxyTokens, err: "lone %"},
		{in: "${MU_TOKEN_TEST}/x", allowed: proxyTokens, want: "${MU_TOKEN_TEST}/x"}, // no ${} in ProxyCommand: the shell's
		{in: "${MU_TOKEN_TEST}/%h", allowed: clientTokens, dollar: true, want: "envval/h.example"},
		{in: "${MU_NO_SUCH_VAR}", allowed: clientTokens, dollar: true, err: "has no value"},
		{in: "${", allowed: clientTokens, dollar: true, err: "bad environment variable"},
	} {
		got, err := expandTokens(c.in, c.allowed, v, c.dollar)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want %q", c.in, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%q: %q %v, want %q", c.in, got, err, c.want)
		}
	}
}

// TestTokensAsSSH: every client token (%C %L %i %k %l %n %p %d %h %r %u,
// %% and ${VAR}) in IdentityAgent, ControlPath and UserKnownHostsFile
// expands as `ssh -G` expands it: the library resolver (our expansion)
// against ssh's own.
func TestTokensAsSSH(t *testing.T) {
	t.Setenv("MU_TOKEN_TEST", "envval")
	all := "%%-%C-%L-%i-%k-%l-%n-%p-%d-%h-%r-%u-${MU_TOKEN_TEST}"
	cfg := testsshd.WriteConfig(t, "Host box\n  HostName 127.0.0.1\n  User alice\n  Port 2222\n  HostKeyAlias kalias\n"+
		"  IdentityAgent ~/a-"+all+"\n  ControlPath /tmp/c-"+all+"\n  UserKnownHostsFile ~/k-"+all+" /tmp/k2-%h\n")
	viaG, err := newResolver(cfg, nil).Resolve(context.Background(), "box")
	if err != nil {
		t.Fatal(err)
	}
	lib := newResolver(cfg, nil)
	lib.sshBin = ""
	viaLib, err := lib.Resolve(context.Background(), "box")
	if err != nil {
		t.Fatal(err)
	}
	if viaG.IdentityAgent != viaLib.IdentityAgent || viaG.ControlPath != viaLib.ControlPath ||
		strings.Join(viaG.UserKnownHostsFiles, " ") != strings.Join(viaLib.UserKnownHostsFiles, " ") {
		t.Fatalf("ssh -G expanded\n  %s\n  %s\n  %v\nthe plugin\n  %s\n  %s\n  %v",
			viaG.IdentityAgent, viaG.ControlPath, viaG.UserKnownHostsFiles, viaLib.IdentityAgent, viaLib.ControlPath, viaLib.UserKnownHostsFiles)
	}
	if !strings.HasSuffix(viaG.ControlPath, "-envval") || !strings.Contains(viaG.ControlPath, "-kalias-") || !strings.Contains(viaG.ControlPath, "-box-2222-") || !strings.Contains(viaG.ControlPath, "-127.0.0.1-alice-") {
		t.Fatalf("ControlPath %q not expanded", viaG.ControlPath)
	}
}

// TestIdentityFileTokensAsSSH: ssh -G leaves IdentityFile and
// CertificateFile unexpanded; the plugin expands them as ssh does when it
// connects (its -v lists the files it tried).
func TestIdentityFileTokensAsSSH(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	t.Setenv("MU_TOKEN_TEST", "envval")
	cfg := testsshd.WriteConfig(t, s.HostBlock("box")+"  IdentityFile ~/.ssh/id-%h-%p-%r-%u-%n-%k-${MU_TOKEN_TEST}\n  CertificateFile %d/cert-%C\n")
	r, err := newResolver(cfg, nil).Resolve(context.Background(), "box")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("ssh", "-v", "-F", cfg, "-o", "ControlPath=none", "box", "true").CombinedOutput()
	idRe := regexp.MustCompile(`debug1: identity file (\S+) type`)
	certRe := regexp.MustCompile(`debug1: certificate file (\S+) type`)
	var ids, certs []string
	for _, m := range idRe.FindAllStringSubmatch(string(out), -1) {
		ids = append(ids, m[1])
	}
	for _, m := range certRe.FindAllStringSubmatch(string(out), -1) {
		certs = append(certs, m[1])
	}
	if len(ids) == 0 || len(certs) == 0 {
		t.Fatalf("ssh -v named no identity or certificate file:\n%s", out)
	}
	if strings.Join(r.IdentityFiles, " ") != strings.Join(ids, " ") || strings.Join(r.CertificateFiles, " ") != strings.Join(certs, " ") {
		t.Fatalf("ssh tried %v and %v; the plugin expanded %v and %v", ids, certs, r.IdentityFiles, r.CertificateFiles)
	}
}
