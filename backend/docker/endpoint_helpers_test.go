package docker_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testCert is a certificate and its key, PEM-encoded, for the TLS tests.
type testCert struct {
	certPEM, keyPEM []byte
	cert            *x509.Certificate
	key             *ecdsa.PrivateKey
}

// newTestPKI makes a CA named cn and a client certificate it signed.
func newTestPKI(t testing.TB, cn string) (ca, client testCert) {
	t.Helper()
	ca = makeCert(t, cn, nil, func(c *x509.Certificate) {
		c.IsCA, c.BasicConstraintsValid = true, true
		c.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	})
	client = makeCert(t, cn+"-client", &ca, func(c *x509.Certificate) {
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	return ca, client
}

// serverCert is a certificate for 127.0.0.1 that ca signed.
func (ca testCert) serverCert(t testing.TB) testCert {
	return makeCert(t, "127.0.0.1", &ca, func(c *x509.Certificate) {
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		c.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	})
}

func makeCert(t testing.TB, cn string, parent *testCert, edit func(*x509.Certificate)) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature}
	edit(tmpl)
	signer, signKey := tmpl, key
	if parent != nil {
		signer, signKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return testCert{pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), cert, key}
}

// certDir writes ca.pem, cert.pem and key.pem, as DOCKER_CERT_PATH wants.
func certDir(t testing.TB, ca, client testCert) string {
	t.Helper()
	d := t.TempDir()
	for f, b := range map[string][]byte{"ca.pem": ca.certPEM, "cert.pem": client.certPEM, "key.pem": client.keyPEM} {
		if err := os.WriteFile(filepath.Join(d, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// engineSocket is the real Engine's unix socket, as the test's own
// environment names it.
func engineSocket() string {
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		return strings.TrimPrefix(h, "unix://")
	}
	return "/var/run/docker.sock"
}

// shortTemp is a temporary directory with a short path (a unix socket's
// path is at most 107 bytes).
func shortTemp(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "mu-ep")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// engineProxy relays every connection it accepts to the real Engine's
// socket (or to another upstream), and counts them: a test proves which
// endpoint a client used. cut ends the connections relayed so far.
type engineProxy struct {
	ln       net.Listener
	upstream func() (net.Conn, error)
	conns    atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	open     []net.Conn
	// holdOn, when set, is a request the Engine gets but whose reply never
	// reaches the client: a link that dies at the worst moment.
	holdOn []byte
	held   atomic.Int64 // requests held
}

// startUnixProxy is an engineProxy on a new unix socket.
func startUnixProxy(t testing.TB) (*engineProxy, string) {
	return startHoldingProxy(t, "")
}

// startHoldingProxy is an engineProxy on a new unix socket that relays a
// request containing holdOn (say "/containers/create") to the Engine and
// never relays its reply.
func startHoldingProxy(t testing.TB, holdOn string) (*engineProxy, string) {
	t.Helper()
	path := filepath.Join(shortTemp(t), "engine.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	return serveProxy(t, ln, []byte(holdOn)), "unix://" + path
}

// startTCPRelay is an engineProxy on 127.0.0.1 relaying to the TCP address
// to (an sshd, say).
func startTCPRelay(t testing.TB, to string) *engineProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveProxyTo(t, ln, nil, func() (net.Conn, error) { return net.Dial("tcp", to) })
}

// port is the proxy's TCP port.
func (p *engineProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// cut closes every connection relayed so far.
func (p *engineProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.open {
		c.Close()
	}
	p.open = nil
}

// startTLSProxy is an engineProxy on 127.0.0.1 that speaks TLS with a
// server certificate ca signed and requires a client certificate ca signed.
func startTLSProxy(t testing.TB, ca testCert) (*engineProxy, string) {
	t.Helper()
	srv := ca.serverCert(t)
	pair, err := tls.X509KeyPair(srv.certPEM, srv.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair},
		ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	return serveProxy(t, ln, nil), "tcp://" + ln.Addr().String()
}

func serveProxy(t testing.TB, ln net.Listener, holdOn []byte) *engineProxy {
	upstream := engineSocket() // now: the test may change DOCKER_HOST later
	return serveProxyTo(t, ln, holdOn, func() (net.Conn, error) { return net.Dial("unix", upstream) })
}

func serveProxyTo(t testing.TB, ln net.Listener, holdOn []byte, upstream func() (net.Conn, error)) *engineProxy {
	p := &engineProxy{ln: ln, holdOn: holdOn, upstream: upstream}
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if tc, ok := c.(*tls.Conn); ok && tc.Handshake() != nil {
				c.Close() // a client that does not trust us, or that we do not trust
				continue
			}
			up, err := p.upstream()
			if err != nil {
				c.Close()
				continue
			}
			p.conns.Add(1)
			p.mu.Lock()
			p.open = append(p.open, c, up)
			p.mu.Unlock()
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				var pair sync.WaitGroup
				pair.Add(2)
				var hold atomic.Bool
				go func() { defer pair.Done(); p.relay(up, c, &hold, true) }()
				go func() { defer pair.Done(); p.relay(c, up, &hold, false) }()
				pair.Wait()
				c.Close()
				up.Close()
			}()
		}
	}()
	return p
}

// relay copies src to dst, then half-closes dst (exec streams rely on it).
// From the client (toEngine), a request holding holdOn sets hold; towards
// the client, once hold is set, what the Engine sends is dropped (HTTP/1.1
// on one connection is not pipelined: it is that request's reply).
func (p *engineProxy) relay(dst, src net.Conn, hold *atomic.Bool, toEngine bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if toEngine && len(p.holdOn) > 0 && bytes.Contains(buf[:n], p.holdOn) {
				hold.Store(true)
				p.held.Add(1)
			}
			if toEngine || !hold.Load() {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			break
		}
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// silentSocket is a unix socket that accepts connections and never
// answers: an Engine that hangs.
func silentSocket(t testing.TB) string {
	t.Helper()
	path := filepath.Join(shortTemp(t), "silent.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	return "unix://" + path
}
