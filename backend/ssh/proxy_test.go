package ssh

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/osproc"
)

// proxied is a config where box's HostName does not resolve: only its
// ProxyCommand (a relay to the real server, recording its tokens) reaches
// it. known_hosts holds the key under name.
func proxied(t *testing.T, s *testsshd.Server, extra, khName string) (cfg, tokens, kh string) {
	t.Helper()
	dir := t.TempDir()
	tokens, kh = filepath.Join(dir, "tokens"), filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(kh, []byte(khName+" "+s.HostKeyPub+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	block := fmt.Sprintf("Host box\n  HostName box.invalid\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n"+
		"  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n  ControlPath none\n"+
		"  ProxyCommand sh -c 'echo \"$0\" >> %s; exec busybox nc \"$1\" \"$2\"' '%%h %%n %%r %%k %%p %%%%' %s %d\n%s",
		s.Port, s.User, s.UserKey, kh, tokens, s.Host, s.Port, extra)
	return testsshd.WriteConfig(t, block), tokens, kh
}

// TestProxyCommand: a host reached only through a relay command, its
// tokens expanded as ssh expands them (ssh runs the same config after the
// plugin and must write the same line), its host key looked up under
// [HostName]:Port, or under HostKeyAlias.
func TestProxyCommand(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	t.Run("relay", func(t *testing.T) {
		cfg, tokens, _ := proxied(t, s, "", fmt.Sprintf("[box.invalid]:%d", s.Port))
		d, _ := inproc(t, Config{SSHConfig: cfg})
		if out := d.mustExec("box", "echo $SSH_CONNECTION"); !strings.Contains(out, fmt.Sprintf(" %d", s.Port)) {
			t.Fatalf("SSH_CONNECTION %q", out)
		}
		if out, err := exec.Command("ssh", "-F", cfg, "box", "true").CombinedOutput(); err != nil {
			t.Fatalf("ssh with the same config: %v: %s", err, out)
		}
		lines := readLines(t, tokens)
		want := fmt.Sprintf("box.invalid box %s box %d %%", s.User, s.Port)
		if len(lines) != 2 || lines[0] != want || lines[1] != lines[0] {
			t.Fatalf("tokens: plugin then ssh wrote %q, want %q twice", lines, want)
		}
	})
	t.Run("host-key-alias", func(t *testing.T) {
		cfg, tokens, _ := proxied(t, s, "  HostKeyAlias Proxied-Box\n", "proxied-box")
		expectOK(t, Config{SSHConfig: cfg})
		if out, err := exec.Command("ssh", "-F", cfg, "box", "true").CombinedOutput(); err != nil {
			t.Fatalf("ssh with the same config: %v: %s", err, out)
		}
		if lines := readLines(t, tokens); len(lines) != 2 || lines[0] != lines[1] || !strings.Contains(lines[0], " proxied-box ") {
			t.Fatalf("%%k: plugin then ssh wrote %q", lines)
		}
	})
	t.Run("host-key-alias-unknown", func(t *testing.T) {
		cfg, _, kh := proxied(t, s, "  HostKeyAlias proxied-box\n", "someone-else")
		// ssh-keyscan cannot go through the ProxyCommand: the remedy gives the line.
		expectHuman(t, Config{SSHConfig: cfg}, "(proxied-box) is not known", "append this line to "+kh+": `proxied-box "+s.HostKeyPub+"`")
	})
	t.Run("command-fails", func(t *testing.T) {
		cfg := testsshd.WriteConfig(t, s.HostBlock("box")+"  ProxyCommand sh -c \"echo 'no route to %h' >&2; exit 3\"\n")
		d, _ := inproc(t, Config{SSHConfig: cfg})
		_, r := d.exec("box", "true", ".", 20*time.Second)
		if r == nil || r.Kind != "retryable" || !strings.Contains(r.Message, "exited with status 3: no route to 127.0.0.1") {
			t.Fatalf("want a retryable error with the command's status and stderr, got %+v", r)
		}
	})
	t.Run("unknown-token", func(t *testing.T) {
		cfg := testsshd.WriteConfig(t, s.HostBlock("box")+"  ProxyCommand busybox nc %h %x\n")
		if err := exec.Command("ssh", "-F", cfg, "box", "true").Run(); err == nil {
			t.Fatal("ssh accepted the unknown token; the premise is wrong")
		}
		expectHuman(t, Config{SSHConfig: cfg}, "unknown token %x", "ProxyCommand", cfg+" line 11")
	})
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestProxyCommandSSHW: the usual jump script, `ssh -W %h:%p bastion`, to a
// host the plugin would otherwise dial directly; the bastion logs the
// login, and the ProxyCommand runs inside the plugin's process group and
// dies with it.
func TestProxyCommandSSHW(t *testing.T) {
	jump := testsshd.Start(t, testsshd.Options{})
	target := testsshd.Start(t, testsshd.Options{})
	cfgPath := filepath.Join(t.TempDir(), "ssh_config")
	block := target.HostBlock("box") + fmt.Sprintf("  ProxyCommand ssh -F %s -W %%h:%%p jump\n", cfgPath) + jump.HostBlock("jump")
	if err := os.WriteFile(cfgPath, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	before := jump.Logins()
	d := subproc(t, nil, "--config", cfgPath)
	d.mustExec("box", "true")
	if after := jump.Logins(); after != before+1 {
		t.Fatalf("the bastion authenticated %d logins, want 1", after-before)
	}
	pid := d.Pgid() // the plugin leads its own group
	proxy := childrenMatching(t, pid, "-W")
	if len(proxy) == 0 {
		t.Fatal("no `ssh -W` child of the plugin")
	}
	for _, p := range proxy {
		if g, _ := syscall.Getpgid(p); g != pid {
			t.Errorf("the ProxyCommand (pid %d) left the plugin's process group: %d", p, g)
		}
	}
	d.CloseStdin()
	for _, p := range proxy {
		if osproc.Alive(p) {
			t.Errorf("the ProxyCommand (pid %d) outlived the plugin", p)
		}
	}
}

// childrenMatching lists pid's descendants whose command line contains s.
func childrenMatching(t *testing.T, pid int, s string) []int {
	t.Helper()
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if !strings.Contains(string(cmdline), s) {
			continue
		}
		for q := p; q > 1; q = ppid(q) {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func ppid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	n, _ := strconv.Atoi(f[1])
	return n
}
