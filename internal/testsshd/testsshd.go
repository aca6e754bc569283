// Package testsshd starts a real OpenSSH sshd for tests: on 127.0.0.1, on a
// free port, with a temporary config, host key, user key, authorized_keys,
// known_hosts and client config. It never touches a system sshd. A test
// fails (never skips) when /usr/sbin/sshd or ssh-keygen is missing.
package testsshd

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/tier"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
)

// SSHD is the OpenSSH daemon the helper runs.
const SSHD = "/usr/sbin/sshd"

// TestUser is the non-root account the servers log in as by default: root
// logins lack signal support on OpenSSH before 9.8, and a real user is the
// common case.
const TestUser = "mu-sshtest"

// Options shape one server.
type Options struct {
	Root        bool     // log in as root instead of TestUser
	MaxSessions int      // sshd MaxSessions; 0 keeps OpenSSH's default (10)
	HostKeyType string   // ed25519 (default), ecdsa or rsa
	HostCert    bool     // also sign the host key with a CA (Server.CAPub)
	Extra       []string // more sshd_config lines
	Alias       string   // the client config's Host alias; default "box"
	NoSFTP      bool     // serve no sftp subsystem (a host without one)
	// BusyboxSh: /bin/sh is busybox ash for everything the server runs
	// (sshd in a mount namespace of its own, busybox bound over the
	// shell /bin/sh names): a host whose POSIX shell is busybox's.
	BusyboxSh bool
	// LoginShell logs in as a user of its own (TestUser-SHELL, its
	// home's ~/.bashrc written from Bashrc) whose login shell is this
	// program (e.g. /usr/bin/fish): TestUser's shell is never changed.
	LoginShell string
	Bashrc     string
}

// Server is one running sshd.
type Server struct {
	Dir         string // private temporary directory (mode 0755: sshd reads it as the user)
	Host        string // 127.0.0.1
	Port        int
	Alias       string
	User        string
	Home        string
	HostKeyFile string
	HostKeyPub  string // "type base64" of the host key
	CAFile      string // host CA private key, with HostCert
	CAPub       string // "type base64" of the host CA, with HostCert
	UserKey     string // private key the client authenticates with
	UserPub     string // its authorized_keys line
	KnownHosts  string // known_hosts holding "[127.0.0.1]:port hostkey"
	Config      string // client config: a Host block for Alias
	Log         string // sshd's log file

	cmd       *exec.Cmd
	busyboxSh bool
}

var userOnce sync.Mutex

// EnsureUser creates TestUser (with a home, /bin/bash, an unlocked
// password-less account) if it does not exist, and returns its home.
func EnsureUser(t testing.TB) (uid, gid int, home string) {
	t.Helper()
	tier.Need(t, "ssh")
	return ensureUser(t, TestUser, "/bin/bash")
}

// ensureUser creates name with a home and shell (as EnsureUser) and sets
// its shell.
func ensureUser(t testing.TB, name, shell string) (uid, gid int, home string) {
	t.Helper()
	userOnce.Lock()
	defer userOnce.Unlock()
	if _, err := user.Lookup(name); err != nil {
		out, err := exec.Command("useradd", "-m", "-s", shell, name).CombinedOutput()
		if err != nil {
			if _, err2 := user.Lookup(name); err2 != nil { // a parallel package may have made it
				t.Fatalf("testsshd: useradd %s: %v: %s", name, err, out)
			}
		}
	}
	// "*": no password, but not locked ("!"), which sshd without PAM refuses.
	if out, err := exec.Command("usermod", "-p", "*", "-s", shell, name).CombinedOutput(); err != nil {
		t.Fatalf("testsshd: usermod: %v: %s", err, out)
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("testsshd: %v", err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, u.HomeDir
}

// Start runs a new sshd and stops it when the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	tier.Need(t, "ssh")
	for _, bin := range []string{SSHD, "ssh-keygen"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("testsshd: %s is required (apt-get install -y openssh-server openssh-client): %v", bin, err)
		}
	}
	if o.Alias == "" {
		o.Alias = "box"
	}
	if o.HostKeyType == "" {
		o.HostKeyType = "ed25519"
	}
	dir, err := os.MkdirTemp("", "testsshd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Server{Dir: dir, Host: "127.0.0.1", Alias: o.Alias, Log: filepath.Join(dir, "sshd.log"), busyboxSh: o.BusyboxSh}
	if o.Root {
		s.User, s.Home = "root", "/root"
	} else if o.LoginShell != "" {
		s.loginUser(t, o)
	} else {
		_, _, s.Home = ensureUser(t, TestUser, "/bin/bash")
		s.User = TestUser
	}
	s.makeKeys(t, o)
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	s.listen(t, s.sshdConfig(t, o))
	t.Cleanup(s.stop)
	s.KnownHosts = filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(s.KnownHosts, []byte(s.KnownHostsLine()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Config = filepath.Join(dir, "ssh_config")
	if err := os.WriteFile(s.Config, []byte(s.HostBlock(o.Alias)), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// makeKeys makes the host key and the user key, and authorizes the latter.
func (s *Server) makeKeys(t testing.TB, o Options) {
	t.Helper()
	s.HostKeyFile = filepath.Join(s.Dir, "host_"+o.HostKeyType)
	s.HostKeyPub = KeyGen(t, s.HostKeyFile, o.HostKeyType, "")
	s.UserKey = filepath.Join(s.Dir, "id_ed25519")
	s.UserPub = KeyGen(t, s.UserKey, "ed25519", "")
	if err := os.WriteFile(filepath.Join(s.Dir, "authorized_keys"), []byte(s.UserPub+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// loginUser makes the user of o.LoginShell (its ~/.bashrc from o.Bashrc)
// the one the server logs in as.
func (s *Server) loginUser(t testing.TB, o Options) {
	t.Helper()
	if _, err := exec.LookPath(o.LoginShell); err != nil {
		t.Fatalf("testsshd: the login shell %s is required (scripts/deps.sh installs it): %v", o.LoginShell, err)
	}
	s.User = TestUser + "-" + filepath.Base(o.LoginShell)
	if o.Bashrc != "" {
		s.User += "-rc"
	}
	uid, gid, home := ensureUser(t, s.User, o.LoginShell)
	s.Home = home
	rc := filepath.Join(home, ".bashrc")
	if err := os.WriteFile(rc, []byte(o.Bashrc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(rc, uid, gid); err != nil {
		t.Fatal(err)
	}
}

// sshdConfig is the server's sshd_config, but its ListenAddress; with
// HostCert, it signs the host key with a new CA first.
func (s *Server) sshdConfig(t testing.TB, o Options) []string {
	t.Helper()
	cfg := []string{
		"HostKey " + s.HostKeyFile,
		"PidFile " + filepath.Join(s.Dir, "sshd.pid"),
		"AuthorizedKeysFile " + filepath.Join(s.Dir, "authorized_keys"),
		"StrictModes no",
		"UsePAM no",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PubkeyAuthentication yes",
		"PermitRootLogin prohibit-password",
		"MaxStartups 200:30:400",
		"LogLevel VERBOSE",
	}
	if !o.NoSFTP {
		cfg = append(cfg, "Subsystem sftp internal-sftp")
	}
	if o.MaxSessions > 0 {
		cfg = append(cfg, fmt.Sprintf("MaxSessions %d", o.MaxSessions))
	}
	if o.HostCert {
		s.CAFile = filepath.Join(s.Dir, "host_ca")
		s.CAPub = KeyGen(t, s.CAFile, "ed25519", "")
		run(t, "ssh-keygen", "-q", "-s", s.CAFile, "-I", "testsshd-host", "-h", "-n", "127.0.0.1,localhost", s.HostKeyFile+".pub")
		cfg = append(cfg, "HostCertificate "+s.HostKeyFile+"-cert.pub")
	}
	return append(cfg, o.Extra...)
}

// listen starts sshd on a free port with cfg; it tries another port when
// another process takes the first one.
func (s *Server) listen(t testing.TB, cfg []string) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		s.Port = freePort(t)
		conf := append([]string{fmt.Sprintf("ListenAddress 127.0.0.1:%d", s.Port)}, cfg...)
		path := filepath.Join(s.Dir, "sshd_config")
		if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := s.start(path); err == nil {
			return
		} else if attempt >= 4 {
			t.Fatalf("testsshd: %v\n%s", err, s.LogText())
		}
	}
}

// HostPattern is how known_hosts names this server: "[127.0.0.1]:port".
func (s *Server) HostPattern() string { return fmt.Sprintf("[%s]:%d", s.Host, s.Port) }

// KnownHostsLine is the plain known_hosts line for the host key.
func (s *Server) KnownHostsLine() string { return s.HostPattern() + " " + s.HostKeyPub }

// HostBlock is a client config Host block for alias that reaches this server
// with its user key and known_hosts, strictly.
func (s *Server) HostBlock(alias string) string {
	return fmt.Sprintf("Host %s\n  HostName %s\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n"+
		"  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n",
		alias, s.Host, s.Port, s.User, s.UserKey, s.KnownHosts)
}

// Addr is "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// SSH runs the OpenSSH client against the server (the client config's alias)
// with args as the remote command, and returns its combined output.
func (s *Server) SSH(t testing.TB, args ...string) string {
	t.Helper()
	a := append([]string{"-F", s.Config, "-o", "ControlMaster=no", "-o", "ControlPath=none", s.Alias}, args...)
	out, err := exec.Command("ssh", a...).CombinedOutput()
	if err != nil {
		t.Fatalf("testsshd: ssh %v: %v: %s", args, err, out)
	}
	return string(out)
}

// LogText returns sshd's log so far.
func (s *Server) LogText() string {
	b, _ := os.ReadFile(s.Log)
	return string(b)
}

// Logins counts the logins sshd accepted so far (its log's "Accepted
// publickey" lines).
func (s *Server) Logins() int { return strings.Count(s.LogText(), "Accepted publickey") }

func (s *Server) start(config string) error {
	logf, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(SSHD, "-D", "-e", "-f", config)
	if s.busyboxSh {
		bb, err := exec.LookPath("busybox")
		if err != nil {
			return fmt.Errorf("busybox is required (apt-get install -y busybox): %w", err)
		}
		// The shell sets up the namespace, then becomes sshd (same pid).
		cmd = exec.Command("unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
			`mount --bind "$1" "$(readlink -f /bin/sh)" && shift && exec "$@"`, "mu-testsshd", bb, SSHD, "-D", "-e", "-f", config)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a test helper, not a plugin run
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	gone := false
	var exitErr error
	up := waitfor.Poll(30*time.Second, func() bool {
		select {
		case exitErr = <-exited:
			gone = true
			return true
		default:
		}
		return s.answers()
	})
	switch {
	case gone:
		return fmt.Errorf("sshd exited at start: %v", exitErr)
	case !up:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return fmt.Errorf("sshd did not answer on %s within 30 s", s.Addr())
	}
	s.cmd = cmd
	go func() { <-exited }()
	return nil
}

// answers reports whether sshd answers on its port with an SSH banner.
func (s *Server) answers() bool {
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.HasPrefix(line, "SSH-2.0-")
}

// Restart stops sshd (the listener and every connection's process, as a
// crash or a restart of the service does) and starts it again on the same
// port with the same configuration. What its sessions left detached (a
// tmux server) runs on.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.stop()
	path := filepath.Join(s.Dir, "sshd_config")
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = s.start(path); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("testsshd: restarting: %v\n%s", err, s.LogText())
}

func (s *Server) stop() {
	if s.cmd == nil {
		return
	}
	pid := s.cmd.Process.Pid
	// The listener, then every sshd process it forked (per connection).
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for _, p := range descendants(pid) {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// KeyGen makes a key pair at path (type ed25519, ecdsa or rsa; passphrase
// may be empty) and returns the public key's "type base64" text.
func KeyGen(t testing.TB, path, typ, passphrase string) string {
	t.Helper()
	args := []string{"-q", "-t", typ, "-N", passphrase, "-C", "", "-f", path}
	if typ == "rsa" {
		args = append(args, "-b", "2048")
	}
	run(t, "ssh-keygen", args...)
	b, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		t.Fatalf("testsshd: bad public key %q", b)
	}
	return f[0] + " " + f[1]
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("testsshd: %s %v: %v: %s", name, args, err, out)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// descendants lists every live process below pid.
func descendants(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		st := string(b)
		i := strings.LastIndexByte(st, ')')
		if i < 0 || i+2 >= len(st) {
			continue
		}
		f := strings.Fields(st[i+2:])
		if len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			parent[p] = pp
		}
	}
	in := map[int]bool{pid: true}
	for changed := true; changed; {
		changed = false
		for p, pp := range parent {
			if !in[p] && in[pp] {
				in[p], changed = true, true
			}
		}
	}
	delete(in, pid)
	out := make([]int, 0, len(in))
	for p := range in {
		out = append(out, p)
	}
	return out
}

// Agent starts an ssh-agent on its own socket without touching
// SSH_AUTH_SOCK, loaded with keys, stops it when the test ends, and
// returns the socket.
func Agent(t testing.TB, keys ...string) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := cmd.Start(); err != nil {
		t.Fatalf("testsshd: ssh-agent: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// The socket file exists from bind(2), before the agent listens: wait
	// until a connection is accepted.
	waitfor.Poll(waitfor.Patience, func() bool {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	for _, k := range keys {
		add := exec.Command("ssh-add", k)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("testsshd: ssh-add: %v: %s", err, out)
		}
	}
	return sock
}
