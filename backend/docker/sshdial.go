package docker

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	gossh "golang.org/x/crypto/ssh"

	"github.com/mu-org/mu-plugins/internal/sshclient"
	"github.com/mu-org/mu-plugins/protocol"
)

// An ssh:// endpoint's Engine is reached over one SSH connection made by
// this project's SSH client (internal/sshclient: resolved and trusted as
// mu-plugin-ssh connects: ssh_config, known_hosts, the agent, ProxyJump,
// ProxyCommand, a running ControlMaster). Every connection of the Docker
// client, the hijacked exec streams included, is a channel of it that
// opens the Engine's unix socket on the remote host (OpenSSH's
// direct-streamlocal). No docker CLI runs there (the CLI's own ssh helper
// runs `docker system dial-stdio` on the remote host instead).

// defaultRemoteSocket is the Engine's socket on the remote host when the
// endpoint names none (ssh://user@host/run/user/1000/docker.sock names one).
const defaultRemoteSocket = "/var/run/docker.sock"

// SSHFlags are the SSH layer's settings for an ssh:// endpoint: the flags
// --ssh-config, --ssh-option, --ssh-known-hosts and --ssh-identity, read as
// mu-plugin-ssh reads --config, --option, --known-hosts and --identity.
type SSHFlags struct {
	Config     string   // the ssh_config file ("" is OpenSSH's own)
	Options    []string // ssh -o Key=Value, for the destination
	KnownHosts string   // replaces the configured known_hosts files
	Identity   string   // a private key offered before the configured ones
}

// Flags registers the flags on fs, bound to f (as every Config.Flags).
func (f *SSHFlags) Flags(fs *flag.FlagSet) {
	fs.StringVar(&f.Config, "ssh-config", "", "for an ssh:// endpoint: the ssh_config `FILE` to resolve its host with, as mu-plugin-ssh's --config (default: OpenSSH's own)")
	fs.Func("ssh-option", "for an ssh:// endpoint: an ssh_config `Key=Value` for its host, as `ssh -o`; repeatable", func(s string) error {
		f.Options = append(f.Options, s)
		return nil
	})
	fs.StringVar(&f.KnownHosts, "ssh-known-hosts", "", "for an ssh:// endpoint: the known_hosts `FILE` to verify host keys with, as mu-plugin-ssh's --known-hosts")
	fs.StringVar(&f.Identity, "ssh-identity", "", "for an ssh:// endpoint: a private key `FILE` offered first, as `ssh -i`")
}

// set reports whether any flag is set.
func (f SSHFlags) set() bool {
	return f.Config != "" || len(f.Options) > 0 || f.KnownHosts != "" || f.Identity != ""
}

// dialerConfig is the SSH layer's configuration, its messages naming these
// flags (--ssh-option, --ssh-identity).
func (f SSHFlags) dialerConfig() sshclient.Config {
	return sshclient.Config{SSHConfig: f.Config, Options: f.Options, KnownHosts: f.KnownHosts, Identity: f.Identity, FlagPrefix: "ssh-"}
}

// UseSSH gives the endpoint the SSH settings f, checked as mu-plugin-ssh
// checks its flags (files that can be read, options ssh knows), with
// absolute paths: a job's view runs in another directory.
func (e *Endpoint) UseSSH(f SSHFlags) error {
	for _, p := range []*string{&f.Config, &f.KnownHosts, &f.Identity} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	if err := f.dialerConfig().Check(); err != nil {
		return err
	}
	e.SSH = f
	return nil
}

// The variables that pin the SSH settings for the plugin's sub-commands
// (PinEnv): read by pinnedEndpoint only, never by the plugin itself.
const (
	envSSHConfig     = "MU_DOCKER_SSH_CONFIG"
	envSSHOptions    = "MU_DOCKER_SSH_OPTIONS" // one option a line
	envSSHKnownHosts = "MU_DOCKER_SSH_KNOWN_HOSTS"
	envSSHIdentity   = "MU_DOCKER_SSH_IDENTITY"
)

func (f SSHFlags) pinEnv(env map[string]string) {
	env[envSSHConfig], env[envSSHKnownHosts], env[envSSHIdentity] = f.Config, f.KnownHosts, f.Identity
	env[envSSHOptions] = strings.Join(f.Options, "\n")
}

func sshFlagsFromEnv(getenv func(string) string) SSHFlags {
	f := SSHFlags{Config: getenv(envSSHConfig), KnownHosts: getenv(envSSHKnownHosts), Identity: getenv(envSSHIdentity)}
	if o := getenv(envSSHOptions); o != "" {
		f.Options = strings.Split(o, "\n")
	}
	return f
}

// sshTarget reads an ssh:// endpoint as the docker CLI does
// (cli/connhelper/ssh): ssh://[user@]host[:port][/socket], no password,
// query or fragment. dest is what the SSH layer dials; socket is the
// Engine's on the remote host: the URL's path, else the default socket.
// Its errors never quote the URL (it may hold a password).
func sshTarget(host string) (dest, socket string, err error) {
	u, err := url.Parse(host)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", "", fmt.Errorf("invalid ssh:// endpoint: %w", err)
	}
	switch {
	case u.Scheme != "ssh":
		return "", "", fmt.Errorf("not an ssh:// endpoint")
	case u.User != nil && func() bool { _, ok := u.User.Password(); return ok }():
		return "", "", fmt.Errorf("an ssh:// endpoint with a password is not supported (the docker CLI refuses it too): authenticate with a key")
	case u.Hostname() == "":
		return "", "", fmt.Errorf("ssh:// endpoint without a host")
	case u.RawQuery != "" || u.Fragment != "":
		return "", "", fmt.Errorf("ssh:// endpoint with a query or a fragment")
	}
	dest = "ssh://" + u.Host
	if u.User != nil && u.User.Username() != "" {
		dest = "ssh://" + u.User.Username() + "@" + u.Host
	}
	socket = defaultRemoteSocket
	if strings.Trim(u.Path, "/") != "" {
		socket = u.Path
	}
	return dest, socket, nil
}

// sshEngine is an ssh:// endpoint's Engine: its SSH connection, made on
// first need and again once it dropped, and the socket it opens.
type sshEngine struct {
	ep     Endpoint
	dest   string // ssh://[user@]host[:port], as the SSH layer dials it
	socket string // the Engine's socket on the remote host
	dialer *sshclient.Dialer
	log    *slog.Logger

	lock   chan struct{} // held while connecting
	mu     sync.Mutex
	cl     *sshclient.Client
	closed bool
}

func newSSHEngine(e Endpoint, log *slog.Logger) (*sshEngine, error) {
	dest, socket, err := sshTarget(e.Host)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &sshEngine{ep: e, dest: dest, socket: socket, log: log, lock: make(chan struct{}, 1),
		dialer: sshclient.NewDialer(e.SSH.dialerConfig(), log)}, nil
}

// connect returns the live SSH connection, dialling it when there is none
// or it dropped. Its errors are the SSH layer's (*protocol.Error: human for
// the configuration, host keys and authentication, with a remedy;
// retryable when the host cannot be reached), naming the endpoint.
func (s *sshEngine) connect(ctx context.Context) (*sshclient.Client, error) {
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, protocol.NotStarted(ctx.Err(), "waiting for the SSH connection to "+s.ep.Host)
	}
	defer func() { <-s.lock }()
	s.mu.Lock()
	cl, closed := s.cl, s.closed
	s.mu.Unlock()
	if closed {
		return nil, protocol.NotStarted(nil, "the plugin is shutting down")
	}
	if cl != nil {
		select {
		case <-cl.Done():
			s.log.Info("the SSH connection to the Docker endpoint dropped; connecting again", "endpoint", s.ep.Host)
		default:
			return cl, nil
		}
	}
	cl, err := s.dialer.Dial(ctx, s.dest)
	if err != nil {
		return nil, s.named(err)
	}
	if !cl.Master {
		go cl.KeepAlive(s.log)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		cl.Close()
		return nil, protocol.NotStarted(nil, "the plugin is shutting down")
	}
	s.cl = cl
	s.log.Info("connected to the Docker endpoint over SSH", "endpoint", s.ep.Host, "route", cl.Route, "hostKey", cl.HostKey, "key", cl.AuthKey, "socket", s.socket)
	return cl, nil
}

// named prefixes an SSH layer's error with the endpoint it was for; a
// host that cannot be reached gets a remedy too.
func (s *sshEngine) named(err error) error {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		pe = protocol.Wrap(protocol.Retryable, err, "connecting")
	}
	cp := *pe
	cp.Message = "the Docker endpoint " + s.ep.Host + " over SSH: " + cp.Message
	if cp.Remedy == "" {
		cp.Remedy = fmt.Sprintf("check that the host of %s is up and answers SSH (`ssh %s true`, with the same ssh_config), or point the plugin at another Engine (docs/docker.md, Endpoints)", s.ep.Host, s.dest)
	}
	return &cp
}

// DialContext is the Docker client's dialer: a channel of the SSH
// connection to the Engine's socket. A connection found dead is made again
// once.
func (s *sshEngine) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	for attempt := 0; ; attempt++ {
		cl, err := s.connect(ctx)
		if err != nil {
			return nil, err
		}
		c, err := cl.DialContext(ctx, "unix", s.socket)
		if err == nil {
			return c, nil
		}
		var oce *gossh.OpenChannelError
		switch {
		case ctx.Err() != nil:
			return nil, protocol.NotStarted(ctx.Err(), "opening the Engine's socket over SSH")
		case errors.As(err, &oce):
			return nil, s.socketError(ctx, cl, err)
		case attempt > 0:
			return nil, protocol.NotStarted(err, "opening the Engine's socket over SSH to "+s.ep.Host)
		}
		cl.Close() // broken: the next connect makes a new one
	}
}

// probe opens a channel to the Engine's socket and closes it, bounded by
// ctx alone: a refusal is diagnosed (socketError) within the call's
// deadline, before the ping's shorter budget starts.
func (s *sshEngine) probe(ctx context.Context) error {
	c, err := s.DialContext(ctx, "unix", s.socket)
	if err != nil {
		return err
	}
	c.Close()
	return nil
}

// Close ends the SSH connection; no new one is made after.
func (s *sshEngine) Close() {
	s.mu.Lock()
	cl := s.cl
	s.closed, s.cl = true, nil
	s.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
}

// detail says how the Engine is reached, for host check's ssh step.
func (s *sshEngine) detail(cl *sshclient.Client) string {
	r := cl.Resolved
	d := fmt.Sprintf("%s@%s (port %d) through %s; host key %s", r.User, r.HostName, r.Port, cl.Route, cl.HostKey)
	if cl.AuthKey != "" {
		d += "; authenticated with " + cl.AuthKey
	}
	return d + "; the Engine's socket " + s.socket + " opened over the SSH connection (direct-streamlocal, no docker CLI on the host)"
}

// socketScript diagnoses a socket the server would not open.
//
//go:embed scripts/ssh-socket.sh
var socketScript string

// socketError says why the server refused to open the socket: sshd gives
// every cause the same "open failed", so a session looks at the socket as
// the SSH user sees it. A missing socket is retryable (the Engine is not
// running there, as for a local socket); a person must act on the rest.
func (s *sshEngine) socketError(ctx context.Context, cl *sshclient.Client, cause error) error {
	r := cl.Resolved
	who := r.User + "@" + r.HostName
	look, err := s.lookAtSocket(ctx, cl)
	if err != nil {
		return protocol.HumanError(
			fmt.Sprintf("check on %s that the Engine runs and that %s may open %s (`ssh %s ls -l %s`), and that sshd allows it to be opened over SSH (AllowStreamLocalForwarding, no `restrict` or `no-port-forwarding` on the key)", r.HostName, r.User, s.socket, r.Alias, s.socket),
			"the Docker Engine at %s: its socket %s on %s could not be opened over SSH (%v), and a look at it over an SSH session failed too (%v)", s.ep, s.socket, who, cause, err)
	}
	switch look.state {
	case "missing":
		return &protocol.Error{Kind: protocol.Retryable,
			Message: fmt.Sprintf("the Docker Engine at %s is unreachable: its socket %s does not exist on %s", s.ep, s.socket, r.HostName),
			Remedy:  fmt.Sprintf("start the Docker Engine on %s, or name its socket in the endpoint (%s/PATH; a rootless Engine's is $XDG_RUNTIME_DIR/docker.sock)", r.HostName, s.dest)}
	case "not-a-socket":
		return protocol.HumanError(fmt.Sprintf("name the Engine's socket in the endpoint (%s/PATH)", s.dest),
			"the Docker Engine at %s: %s on %s is not a socket (%s)", s.ep, s.socket, r.HostName, look.ls)
	case "denied":
		group := look.group()
		return protocol.HumanError(
			fmt.Sprintf("add %s to the group %s on %s (`sudo usermod -aG %s %s`; it applies to new logins, so stop a running ControlMaster first: `ssh -O exit %s`), or name a socket %s may open in the endpoint (%s/PATH)", r.User, group, r.HostName, group, r.User, r.Alias, r.User, s.dest),
			"the Docker Engine at %s: permission denied: %s may not open its socket on %s (%s; %s)", s.ep, r.User, r.HostName, look.ls, look.id)
	}
	return protocol.HumanError(
		fmt.Sprintf("allow %s to open unix sockets over SSH on %s: AllowStreamLocalForwarding yes (or local) and no DisableForwarding in its sshd_config, and no `restrict` or `no-port-forwarding` on the key in authorized_keys (mu-plugin-docker reaches the Engine only that way: it runs no docker CLI there); or start the Engine if its socket is stale", r.User, r.HostName),
		"the Docker Engine at %s: sshd on %s refused to open its socket %s for %s, who may open it (%s): the server does not allow unix sockets to be opened over SSH, or no Engine listens there", s.ep, r.HostName, s.socket, r.User, look.ls)
}

// socketLook is what the SSH user sees of the socket.
type socketLook struct {
	state  string // missing, not-a-socket, denied or open
	ls, id string
}

// group is the socket's group, from its `ls -ld` line.
func (l socketLook) group() string {
	if f := strings.Fields(l.ls); len(f) > 3 {
		return f[3]
	}
	return "docker"
}

// lookAtSocket runs socketScript over a session: the script is a constant
// of the command line, the path travels on stdin.
func (s *sshEngine) lookAtSocket(ctx context.Context, cl *sshclient.Client) (socketLook, error) {
	sess, err := cl.NewSession()
	if err != nil {
		return socketLook{}, err
	}
	defer sess.Close()
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	sess.Stdin = strings.NewReader(s.socket + "\n")
	out, err := sess.Output("exec /bin/sh -c '" + socketScript + "'")
	if err != nil {
		return socketLook{}, err
	}
	lines := strings.SplitN(strings.TrimRight(string(out), "\n"), "\n", 3)
	if len(lines) < 3 {
		return socketLook{}, fmt.Errorf("unexpected answer %q", out)
	}
	return socketLook{state: strings.TrimSpace(lines[0]), ls: strings.TrimSpace(lines[1]), id: strings.TrimSpace(lines[2])}, nil
}
