package sshclient

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testsshd"
)

// TestOptionAuditCoversSSHG: every option `ssh -G` prints, with the ones it
// prints only when set, has an entry in the audit: a new OpenSSH option
// fails this test until someone decides what it means for the plugin.
func TestOptionAuditCoversSSHG(t *testing.T) {
	args := []string{"-G", "-F", "/dev/null"}
	for _, o := range []string{"BindAddress=127.0.0.1", "BindInterface=lo", "CertificateFile=/x", "ControlPath=/x", "HostKeyAlias=x",
		"IdentityAgent=/x", "KbdInteractiveDevices=pam", "KnownHostsCommand=/x", "LocalCommand=x", "LocalForward=1 a:2", "RemoteForward=1 a:2",
		"DynamicForward=1", "PKCS11Provider=/x", "ProxyJump=x", "RemoteCommand=x", "RevokedHostKeys=/x", "SendEnv=X", "SetEnv=X=1",
		"PermitRemoteOpen=any", "CanonicalDomains=x", "Tag=x", "ChannelTimeout=session=1", "ObscureKeystrokeTiming=no"} {
		// The newest options (9.4+) only where this OpenSSH knows them.
		if exec.Command("ssh", "-G", "-F", "/dev/null", "-o", o, "box").Run() == nil {
			args = append(args, "-o", o)
		}
	}
	out, err := exec.Command("ssh", append(args, "box")...).Output()
	if err != nil {
		t.Fatalf("ssh -G: %v", err)
	}
	var missing []string
	for _, l := range strings.Split(string(out), "\n") {
		k, _, _ := strings.Cut(l, " ")
		if k = strings.ToLower(k); k != "" && optionPolicies[k].name == "" {
			missing = appendNew(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("options ssh -G prints that the audit does not classify: %v", missing)
	}
}

// TestOptionAuditDocumented: docs/ssh.md's table lists every audited
// option with its class.
func TestOptionAuditDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "ssh.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, p := range optionPolicies {
		re := regexp.MustCompile(`(?m)^\| ` + "`" + regexp.QuoteMeta(p.name) + "`" + ` \| ` + regexp.QuoteMeta(p.class) + ` \|`)
		if !re.MatchString(doc) {
			t.Errorf("docs/ssh.md has no row | `%s` | %s | …", p.name, p.class)
		}
	}
}

// TestOrigins: a value is traced to the line that set it, in a Host block,
// a matching Match block, an included file, the file's top, or --option.
func TestOrigins(t *testing.T) {
	dir := t.TempDir()
	inc := filepath.Join(dir, "inc.conf")
	os.WriteFile(inc, []byte("# included\nServerAliveCountMax 7\n"), 0o600)
	cfg := testsshd.WriteConfig(t, "ConnectTimeout 9\n"+
		"Host other\n  User nobody\n"+
		"Host box\n  HostName 127.0.0.1\n  Include "+inc+"\n"+
		"Match exec \"false\"\n  Port 2\n"+
		"Match host 127.0.0.1\n  Port 2222\n  User alice\n")
	for _, via := range []string{viaSSHG, viaLib} {
		r := newResolver(cfg, []string{"User=bob"})
		if via == viaLib {
			r.sshBin = ""
		}
		res, err := r.Resolve(context.Background(), "box")
		if err != nil {
			t.Fatal(err)
		}
		for opt, want := range map[string]string{
			"ConnectTimeout":      cfg + " line 1",
			"HostName":            cfg + " line 5",
			"ServerAliveCountMax": inc + " line 2",
			"User":                "--option User=bob",
		} {
			if got := res.Where(opt); got != want {
				t.Errorf("%s: %s set at %q, want %q", via, opt, got, want)
			}
		}
		if via == viaSSHG { // the library skips Match exec, and matches Match host on the alias
			if got := res.Where("Port"); got != cfg+" line 10" || res.Port != 2222 {
				t.Errorf("ssh -G: Port %d set at %q, want 2222 at line 10", res.Port, got)
			}
		}
	}
}

// TestCanonicalizeHostnameWithoutSSH: without the OpenSSH client, the
// library resolver refuses CanonicalizeHostname, naming its line; with
// ssh -G it is ssh's own work.
func TestCanonicalizeHostnameWithoutSSH(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	cfg := testsshd.WriteConfig(t, "CanonicalizeHostname yes\n"+s.HostBlock("box"))
	r := newResolver(cfg, nil)
	r.sshBin = ""
	_, err := r.Resolve(context.Background(), "box")
	if err == nil || !strings.Contains(err.Error(), "CanonicalizeHostname yes ("+cfg+" line 1)") {
		t.Fatalf("want a refusal naming line 1, got %v", err)
	}
	r = newResolver(cfg, nil) // with ssh -G it is ssh's own work
	if _, err := r.Resolve(context.Background(), "box"); err != nil {
		t.Fatalf("with ssh -G: %v", err)
	}
}
