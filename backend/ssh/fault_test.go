package ssh

// Faults OpenSSH cannot be made to show (a connection cut mid-call, a stall),
// from an in-process x/crypto/ssh server. The same behaviours' normal paths
// are tested against the real sshd elsewhere.

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/protocol"
)

// gateConn blocks every Read and Write once frozen: a stalled peer.
type gateConn struct {
	net.Conn
	once   sync.Once
	frozen chan struct{}
}

func (g *gateConn) freeze() { g.once.Do(func() { close(g.frozen) }) }

func (g *gateConn) Read(p []byte) (int, error) {
	select {
	case <-g.frozen:
		select {} // stalled for ever (the test's listener close ends the process's interest)
	default:
	}
	return g.Conn.Read(p)
}

func (g *gateConn) Write(p []byte) (int, error) {
	select {
	case <-g.frozen:
		select {}
	default:
	}
	return g.Conn.Write(p)
}

// faultServer: mode "cut" drops the TCP connection once a command started,
// "stall" stops answering once a command started, "noexec" refuses every
// command, "mute" accepts TCP and never speaks SSH.
func faultServer(t *testing.T, mode string) string {
	return faultServerAlive(t, mode, 1)
}

// faultServerAlive is faultServer with ServerAliveInterval alive seconds.
func faultServerAlive(t *testing.T, mode string, alive int) string {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	cfg := &gossh.ServerConfig{PublicKeyCallback: func(gossh.ConnMetadata, gossh.PublicKey) (*gossh.Permissions, error) { return nil, nil }}
	cfg.AddHostKey(signer)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { nc.Close() })
			if mode == "mute" {
				continue
			}
			go faultConn(nc, cfg, mode)
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	os.WriteFile(kh, []byte(fmt.Sprintf("[127.0.0.1]:%d %s", port, gossh.MarshalAuthorizedKey(signer.PublicKey()))), 0o600)
	key := filepath.Join(dir, "id")
	testsshd.KeyGen(t, key, "ed25519", "")
	conf := filepath.Join(dir, "ssh_config")
	os.WriteFile(conf, []byte(fmt.Sprintf("Host fault\n  HostName 127.0.0.1\n  Port %d\n  User u\n  IdentityFile %s\n"+
		"  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n  ConnectTimeout 2\n  ServerAliveInterval %d\n  ServerAliveCountMax 2\n",
		port, key, kh, alive)), 0o600)
	return conf
}

func faultConn(nc net.Conn, cfg *gossh.ServerConfig, mode string) {
	g := &gateConn{Conn: nc, frozen: make(chan struct{})}
	_, chans, reqs, err := gossh.NewServerConn(g, cfg)
	if err != nil {
		return
	}
	go gossh.DiscardRequests(reqs)
	n := 0
	for nch := range chans {
		if n++; mode == "stallopen" && n == 2 {
			g.freeze() // the control session opened; the next open never answers
			continue
		}
		ch, creqs, err := nch.Accept()
		if err != nil {
			continue
		}
		go func() {
			for req := range creqs {
				if req.Type != "exec" {
					req.Reply(false, nil)
					continue
				}
				if mode == "noexec" {
					req.Reply(false, nil)
					continue
				}
				req.Reply(true, nil)
				fmt.Fprintf(ch.Stderr(), "mu-ssh-pg 4242\n")
				time.Sleep(100 * time.Millisecond)
				switch mode {
				case "cut":
					nc.Close()
				case "stall":
					g.freeze()
				}
			}
		}()
	}
}

// TestFaultServer: a server that fails at each step answers the kind the
// step allows. A cut mid-call, or a stall (keepalives every 1 s, 2 missed,
// close the stalled connection instead of waiting for the 60 s timeout),
// may have run the script: unknown-outcome. A server that accepts TCP and
// never speaks (ConnectTimeout, 2 s, bounds the handshake too), or one that
// refuses the command, started nothing: retryable.
func TestFaultServer(t *testing.T) {
	cases := []struct {
		mode, script string
		want         protocol.Kind
	}{
		{"cut", "sleep 100", protocol.UnknownOutcome},
		{"stall", "sleep 100", protocol.UnknownOutcome},
		{"mute", "true", protocol.Retryable},
		{"noexec", "true", protocol.Retryable},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			d, _ := inproc(t, Config{SSHConfig: faultServer(t, c.mode)})
			res, r := d.exec("fault", c.script, ".", 60*time.Second)
			if r == nil || r.Kind != c.want {
				t.Fatalf("want %s, got %+v %+v", c.want, res, r)
			}
		})
	}
}

func TestUnreachableIsRetryable(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c")
	os.WriteFile(cfg, []byte("Host box\n  HostName 127.0.0.1\n  Port 1\n"), 0o600)
	d, _ := inproc(t, Config{SSHConfig: cfg})
	_, r := d.exec("box", "true", ".", 30*time.Second)
	if r == nil || r.Kind != "retryable" {
		t.Fatalf("want retryable, got %+v", r)
	}
}

// TestFaultSessionOpenStall: a session open the server never answers is
// given up at the call's timeout (retryable: nothing started), not left
// hanging until the keepalives (60 s here) notice.
func TestFaultSessionOpenStall(t *testing.T) {
	d, _ := inproc(t, Config{SSHConfig: faultServerAlive(t, "stallopen", 30)})
	_, r := d.exec("fault", "true", ".", 2*time.Second)
	if r == nil || r.Kind != "retryable" || !strings.Contains(r.Message, "nothing started") {
		t.Fatalf("want retryable, nothing started; got %+v", r)
	}
}
