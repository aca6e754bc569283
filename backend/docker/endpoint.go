package docker

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/internal/safefile"
)

// Endpoint is the Engine a registration addresses, chosen exactly as the
// docker CLI chooses it (ResolveEndpoint): the plugin and `docker info` run
// with the same flags and environment talk to the same Engine.
type Endpoint struct {
	Host    string // unix:///…, tcp://host:port[/path] or ssh://user@host[:port]
	Context string // the context it came from; DefaultContext: the environment's
	Source  string // what chose it, for the log and host check
	// ConfigDir is the docker CLI's configuration directory: $DOCKER_CONFIG,
	// else ~/.docker (config.json and the context store live there).
	ConfigDir string
	// TLS is the TLS material of a tcp:// endpoint; nil is plain HTTP. A
	// socket (unix://, ssh://) never uses TLS, as in the CLI.
	TLS *TLSData
	// SSH is how an ssh:// endpoint is dialled (the --ssh-* flags, UseSSH).
	SSH SSHFlags
}

// TLSData is an endpoint's TLS material (PEM), as the CLI's context store
// keeps it: ca.pem, cert.pem, key.pem, each optional.
type TLSData struct {
	CA, Cert, Key []byte
	SkipVerify    bool
	Dir           string // where the files were read (DOCKER_CERT_PATH, or the store's)
}

// DefaultContext is the docker CLI's reserved context: the endpoint that
// DOCKER_HOST and the TLS variables describe, or the default socket.
const DefaultContext = "default"

// The docker CLI's defaults (github.com/docker/cli opts/hosts.go).
const (
	defaultUnixHost = "unix:///var/run/docker.sock"
	defaultTLSHost  = "tcp://localhost:2376"
	defaultTCPPort  = "2375"
)

// ResolveEndpoint chooses the Engine as the docker CLI does
// (cli/command/cli.go resolveContextName and resolveDefaultDockerEndpoint):
// the context named by contextFlag (--context), else DOCKER_HOST (the
// default context), else DOCKER_CONTEXT, else config.json's currentContext
// in $DOCKER_CONFIG (default ~/.docker), else the default context. A named
// context's endpoint and TLS material come from the context store. getenv
// reads the environment. It reads files only: it never dials.
func ResolveEndpoint(contextFlag string, getenv func(string) string) (Endpoint, error) {
	dir, err := configDir(getenv)
	if err != nil {
		return Endpoint{}, err
	}
	name, source := contextFlag, "--context "+contextFlag
	switch {
	case contextFlag != "":
	case getenv("DOCKER_HOST") != "":
		name, source = DefaultContext, "DOCKER_HOST"
	case getenv("DOCKER_CONTEXT") != "":
		name, source = getenv("DOCKER_CONTEXT"), "DOCKER_CONTEXT="+getenv("DOCKER_CONTEXT")
	default:
		cur, err := currentContext(dir)
		if err != nil {
			return Endpoint{}, err
		}
		name, source = cur, "the current context in "+filepath.Join(dir, "config.json")
		if cur == "" {
			name, source = DefaultContext, "the default"
		}
	}
	var ep Endpoint
	if name == DefaultContext {
		ep, err = defaultEndpoint(getenv, dir)
	} else {
		ep, err = contextEndpoint(dir, name)
	}
	if err != nil {
		return Endpoint{}, fmt.Errorf("the Docker endpoint (from %s): %w", source, err)
	}
	ep.Source, ep.ConfigDir = source, dir
	return ep, nil
}

func configDir(getenv func(string) string) (string, error) {
	if d := getenv("DOCKER_CONFIG"); d != "" {
		return filepath.Abs(d)
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no DOCKER_CONFIG and no home directory for ~/.docker: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".docker"), nil
}

// currentContext is config.json's currentContext ("" when the file or the
// field is absent). A config.json that does not parse is an error: the CLI
// warns and falls back to the default context, which would silently address
// another Engine than the user chose.
func currentContext(dir string) (string, error) {
	b, err := safefile.Read(filepath.Join(dir, "config.json"), safefile.MaxConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	return cfg.CurrentContext, nil
}

// defaultEndpoint is the default context: DOCKER_HOST, with TLS when
// DOCKER_TLS or DOCKER_TLS_VERIFY is set (verified only with the latter),
// its files from DOCKER_CERT_PATH or the config directory (ca.pem
// required, cert.pem and key.pem when present), as the CLI's flags do.
func defaultEndpoint(getenv func(string) string, dir string) (Endpoint, error) {
	useTLS := getenv("DOCKER_TLS") != "" || getenv("DOCKER_TLS_VERIFY") != ""
	host, err := parseHost(useTLS, getenv("DOCKER_HOST"))
	if err != nil {
		return Endpoint{}, err
	}
	ep := Endpoint{Host: host, Context: DefaultContext}
	if !useTLS {
		return ep, nil
	}
	certDir := getenv("DOCKER_CERT_PATH")
	if certDir == "" {
		certDir = dir
	}
	if certDir, err = filepath.Abs(certDir); err != nil {
		return Endpoint{}, err
	}
	t := &TLSData{SkipVerify: getenv("DOCKER_TLS_VERIFY") == "", Dir: certDir}
	if t.CA, err = safefile.Read(filepath.Join(certDir, "ca.pem"), safefile.MaxConfig); err != nil {
		return Endpoint{}, fmt.Errorf("TLS is on (DOCKER_TLS_VERIFY or DOCKER_TLS) but the CA cannot be read: %w", err)
	}
	if t.Cert, t.Key, err = readPair(certDir); err != nil {
		return Endpoint{}, err
	}
	ep.TLS = t
	return ep, nil
}

// contextEndpoint reads a named context from the store: meta.json's docker
// endpoint, and its TLS files when the context has any.
func contextEndpoint(dir, name string) (Endpoint, error) {
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	b, err := safefile.Read(filepath.Join(dir, "contexts", "meta", id, "meta.json"), safefile.MaxConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return Endpoint{}, fmt.Errorf("context %q does not exist in %s (docker context ls lists them)", name, dir)
	}
	if err != nil {
		return Endpoint{}, err
	}
	var meta struct {
		Endpoints map[string]struct {
			Host          string
			SkipTLSVerify bool
		}
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return Endpoint{}, fmt.Errorf("context %q: %w", name, err)
	}
	d, ok := meta.Endpoints["docker"]
	if !ok {
		return Endpoint{}, fmt.Errorf("context %q has no docker endpoint", name)
	}
	ep := Endpoint{Host: d.Host, Context: name}
	if ep.Host == "" {
		ep.Host = defaultUnixHost
	}
	if ep.Scheme() == "ssh" {
		if _, _, err := sshTarget(ep.Host); err != nil {
			return Endpoint{}, fmt.Errorf("context %q: %w", name, err)
		}
	}
	tlsDir := filepath.Join(dir, "contexts", "tls", id, "docker")
	t := &TLSData{SkipVerify: d.SkipTLSVerify, Dir: tlsDir}
	haveFiles := false
	if t.CA, err = readOptional(filepath.Join(tlsDir, "ca.pem")); err != nil {
		return Endpoint{}, err
	}
	if t.Cert, t.Key, err = readPair(tlsDir); err != nil {
		return Endpoint{}, err
	}
	if st, err := os.Stat(tlsDir); err == nil && st.IsDir() {
		haveFiles = true
	}
	if haveFiles || d.SkipTLSVerify {
		ep.TLS = t
	}
	return ep, nil
}

func readOptional(path string) ([]byte, error) {
	b, err := safefile.Read(path, safefile.MaxConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// readPair reads cert.pem and key.pem from dir, each when present.
func readPair(dir string) (cert, key []byte, err error) {
	if cert, err = readOptional(filepath.Join(dir, "cert.pem")); err != nil {
		return nil, nil, err
	}
	if key, err = readOptional(filepath.Join(dir, "key.pem")); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// parseHost normalises a DOCKER_HOST value as the CLI does (opts.ParseHost):
// empty is the default socket (or tcp://localhost:2376 with TLS); an
// address without a scheme is tcp; tcp gets port 2375 when it has none.
func parseHost(useTLS bool, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		if useTLS {
			return defaultTLSHost, nil
		}
		return defaultUnixHost, nil
	}
	proto, addr, ok := strings.Cut(v, "://")
	if !ok {
		proto, addr = "tcp", v
	}
	switch proto {
	case "unix":
		if strings.Contains(addr, "://") {
			return "", fmt.Errorf("DOCKER_HOST %q: invalid unix address", v)
		}
		if addr == "" {
			return defaultUnixHost, nil
		}
		return "unix://" + addr, nil
	case "tcp":
		return parseTCP(v, addr)
	case "ssh":
		if _, _, err := sshTarget(v); err != nil {
			return "", fmt.Errorf("DOCKER_HOST: %w", err)
		}
		return v, nil
	}
	return "", fmt.Errorf("DOCKER_HOST %q: want unix://, tcp:// or ssh://", v)
}

func parseTCP(v, addr string) (string, error) {
	if addr == "" {
		return "tcp://localhost:" + defaultTCPPort, nil
	}
	if strings.Contains(addr, "://") {
		return "", fmt.Errorf("DOCKER_HOST %q: invalid tcp address", v)
	}
	if strings.HasSuffix(addr, "]:") {
		addr += defaultTCPPort
	}
	u, err := url.Parse("tcp://" + addr)
	if err != nil {
		return "", fmt.Errorf("DOCKER_HOST %q: %w", v, err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port, err = net.SplitHostPort(net.JoinHostPort(u.Host, defaultTCPPort))
	}
	if err != nil {
		return "", fmt.Errorf("DOCKER_HOST %q: invalid address", v)
	}
	if host == "" {
		host = "localhost"
	}
	if port == "" {
		port = defaultTCPPort
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return "", fmt.Errorf("DOCKER_HOST %q: invalid port", v)
	}
	return "tcp://" + net.JoinHostPort(host, port) + u.Path, nil
}

// Scheme is the endpoint's scheme: unix, tcp or ssh.
func (e Endpoint) Scheme() string {
	s, _, _ := strings.Cut(e.Host, "://")
	return s
}

// String names the endpoint for logs, errors and host check.
func (e Endpoint) String() string {
	s := e.Host
	if e.Context != "" && e.Context != DefaultContext {
		s += " (context " + e.Context + ")"
	}
	if e.TLS != nil && e.Scheme() == "tcp" {
		if e.TLS.SkipVerify {
			s += " over TLS, server not verified"
		} else {
			s += " over TLS"
		}
	}
	return s
}

// Instance is the instance derived from the endpoint's address: stable for
// the same configuration, known without asking the Engine (docs/docker.md,
// "Instance").
func (e Endpoint) Instance() string {
	sum := sha256.Sum256([]byte(e.Host))
	return "docker-" + hex.EncodeToString(sum[:8])
}

// Client is a Docker API client for an endpoint. Close ends its
// connections, and the SSH connection an ssh:// endpoint rides on.
type Client struct {
	*client.Client
	ssh *sshEngine // nil unless ssh://
}

// Close closes the client and what it rides on.
func (c *Client) Close() error {
	err := c.Client.Close()
	if c.ssh != nil {
		c.ssh.Close()
	}
	return err
}

// NewClient is a client for the endpoint. It dials nothing: the first call
// does. log is the SSH layer's log for an ssh:// endpoint (nil: none).
func (e Endpoint) NewClient(log *slog.Logger) (*Client, error) {
	opts := []client.Opt{client.WithAPIVersionFromEnv()}
	var se *sshEngine
	switch e.Scheme() {
	case "unix":
		opts = append(opts, client.WithHost(e.Host))
	case "tcp":
		if e.TLS != nil {
			cfg, err := e.TLS.config()
			if err != nil {
				return nil, fmt.Errorf("the TLS material of %s: %w", e, err)
			}
			opts = append(opts, client.WithHTTPClient(&http.Client{
				Transport:     &http.Transport{TLSClientConfig: cfg, DialContext: (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext},
				CheckRedirect: client.CheckRedirect,
			}))
		}
		opts = append(opts, client.WithHost(e.Host))
	case "ssh":
		// The Engine is a unix socket on the remote host: a unix client (no
		// proxy, no compression) whose every connection, hijacked exec
		// streams included, is a channel of one SSH connection (sshdial.go).
		var err error
		if se, err = newSSHEngine(e, log); err != nil {
			return nil, err
		}
		opts = append(opts, client.WithHost("unix://"+se.socket), client.WithDialContext(se.DialContext))
	default:
		return nil, fmt.Errorf("endpoint %s: want unix://, tcp:// or ssh://", e.Host)
	}
	c, err := client.New(opts...)
	if err != nil {
		return nil, err
	}
	return &Client{Client: c, ssh: se}, nil
}

// config is the client's TLS configuration, as the CLI builds a context's
// (cli/context/docker/load.go): the CA alone as the roots when given, the
// client certificate when both halves are, verification unless skipped.
func (t *TLSData) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.SkipVerify}
	if t.CA != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(t.CA) {
			return nil, fmt.Errorf("%s: ca.pem holds no certificate", t.Dir)
		}
		cfg.RootCAs = pool
	}
	if t.Cert != nil && t.Key != nil {
		//lint:ignore SA1019 detecting an encrypted key to refuse it, as the CLI does
		if blk, _ := pem.Decode(t.Key); blk != nil && x509.IsEncryptedPEMBlock(blk) {
			return nil, fmt.Errorf("%s: key.pem is encrypted (the docker CLI no longer reads encrypted keys either)", t.Dir)
		}
		pair, err := tls.X509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Dir, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// PinEnv is the environment that makes this plugin's sub-commands (a job's
// view, git's bridge) resolve this same endpoint, whatever their own
// environment holds: a named context by its name and store, else
// DOCKER_HOST with the TLS variables; for an ssh:// endpoint, the SSH
// settings too (pinnedEndpoint reads them). An empty value unsets (every
// variable reads empty as unset, here and in the CLI).
func (e Endpoint) PinEnv(getenv func(string) string) map[string]string {
	if e.Host == "" { // no endpoint was resolved: the environment stands
		return map[string]string{}
	}
	env := map[string]string{"DOCKER_CONFIG": e.ConfigDir}
	if e.Scheme() == "ssh" {
		e.SSH.pinEnv(env)
	}
	if v := getenv("DOCKER_API_VERSION"); v != "" {
		env["DOCKER_API_VERSION"] = v
	}
	if e.Context != DefaultContext {
		env["DOCKER_HOST"], env["DOCKER_CONTEXT"] = "", e.Context
		return env
	}
	env["DOCKER_HOST"], env["DOCKER_CONTEXT"] = e.Host, ""
	env["DOCKER_TLS"], env["DOCKER_TLS_VERIFY"], env["DOCKER_CERT_PATH"] = "", "", ""
	if e.TLS != nil {
		env["DOCKER_TLS"], env["DOCKER_CERT_PATH"] = "1", e.TLS.Dir
		if !e.TLS.SkipVerify {
			env["DOCKER_TLS_VERIFY"] = "1"
		}
	}
	return env
}
