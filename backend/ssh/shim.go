package ssh

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The GIT_SSH shim is this same binary's `git-ssh` sub-command. git runs
// it as `git-ssh [-o SendEnv=GIT_PROTOCOL] [-p PORT] HOST 'git-upload-pack
// PATH'`; it connects back to the running plugin over a unix socket in a
// private temporary directory, and the plugin runs the git command over its
// own SSH connection, under the kill-safe wrapper. No second login, the
// same trust rules.

// Environment the shim reads (set by the plugin for git only).
const (
	envShimSock  = "MU_SSH_SHIM_SOCK"
	envShimToken = "MU_SSH_SHIM_TOKEN"
)

// Frame types, plugin to shim.
const (
	frameStdout = 1
	frameStderr = 2
	frameExit   = 3
)

// shimHello is the shim's first line.
type shimHello struct {
	Token       string   `json:"token"`
	Args        []string `json:"args"`
	GitProtocol string   `json:"gitProtocol,omitempty"`
}

type shim struct {
	dir  string
	sock string
	ln   net.Listener
	b    *Backend

	mu   sync.Mutex
	regs map[string]*shimReg
}

// shimReg is one git run's permission to use a connection.
type shimReg struct {
	c        *conn
	ctx      context.Context
	deadline time.Time
}

func (b *Backend) ensureShim() (*shim, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shim != nil {
		return b.shim, nil
	}
	dir, err := os.MkdirTemp("", "mu-plugin-ssh-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	sock := filepath.Join(dir, "shim.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &shim{dir: dir, sock: sock, ln: ln, b: b, regs: map[string]*shimReg{}}
	go s.serve()
	b.shim = s
	return s, nil
}

func (s *shim) close() {
	s.ln.Close()
	os.RemoveAll(s.dir)
}

// register allows git runs carrying the returned token to use c until ctx
// ends or deadline passes.
func (s *shim) register(ctx context.Context, c *conn, deadline time.Time) (token string, done func()) {
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	token = hex.EncodeToString(raw[:])
	s.mu.Lock()
	s.regs[token] = &shimReg{c: c, ctx: ctx, deadline: deadline}
	s.mu.Unlock()
	return token, func() {
		s.mu.Lock()
		delete(s.regs, token)
		s.mu.Unlock()
	}
}

func (s *shim) serve() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.handle(nc)
	}
}

// frameWriter writes one stream's bytes as frames.
type frameWriter struct {
	mu  *sync.Mutex
	w   io.Writer
	typ byte
}

func (f frameWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var hdr [5]byte
	hdr[0] = f.typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	if _, err := f.w.Write(hdr[:]); err != nil {
		return 0, err
	}
	return f.w.Write(p)
}

func (s *shim) handle(nc net.Conn) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	var mu sync.Mutex
	fail := func(code int, format string, args ...any) {
		_, _ = frameWriter{&mu, nc, frameStderr}.Write([]byte("mu-plugin-ssh: " + fmt.Sprintf(format, args...) + "\n"))
		_, _ = frameWriter{&mu, nc, frameExit}.Write([]byte{byte(code)})
	}
	line, err := br.ReadString('\n')
	if err != nil {
		return
	}
	var h shimHello
	if err := json.Unmarshal([]byte(line), &h); err != nil {
		fail(255, "bad shim hello")
		return
	}
	s.mu.Lock()
	reg := s.regs[h.Token]
	s.mu.Unlock()
	if reg == nil {
		fail(255, "this git transport is not registered")
		return
	}
	argv, err := gitCommand(h.Args)
	if err != nil {
		fail(255, "%v", err)
		return
	}
	if h.GitProtocol != "" {
		if !validGitProtocol(h.GitProtocol) {
			fail(255, "bad GIT_PROTOCOL")
			return
		}
		// The wrapper exports it (no extra `env` process): git's SendEnv,
		// which sshd's default AcceptEnv would refuse.
		argv = append([]string{gitProtocolArg + h.GitProtocol}, argv...)
	}
	if time.Until(reg.deadline) <= 0 {
		fail(255, "timed out")
		return
	}
	b := s.b
	r, err := b.start(reg.ctx, reg.c, runSpec{
		until:  reg.deadline,
		cwd:    ".",
		argv:   argv,
		stdin:  br,
		stdout: frameWriter{&mu, nc, frameStdout},
		stderr: frameWriter{&mu, nc, frameStderr},
	})
	if err != nil {
		fail(255, "%v", err)
		return
	}
	exit, err := b.outcome(reg.ctx, r)
	code := 255
	switch {
	case err != nil:
		fail(255, "%v", err)
		return
	case exit == nil:
		fail(255, "timed out; the remote git was stopped")
		return
	default:
		code = *exit
	}
	_, _ = frameWriter{&mu, nc, frameExit}.Write([]byte{byte(code)})
}

// gitCommand parses git's ssh arguments down to the remote git command, as
// argv: only git-upload-pack, git-receive-pack and git-upload-archive with
// one path are allowed.
func gitCommand(args []string) ([]string, error) {
	i := 0
	for i < len(args) {
		a := args[i]
		switch {
		case a == "-o" || a == "-p" || a == "-l":
			i += 2
			continue
		case a == "-4" || a == "-6" || a == "-T" || a == "-G":
			i++
			continue
		case strings.HasPrefix(a, "-"):
			return nil, fmt.Errorf("unexpected ssh option %q from git", a)
		}
		break
	}
	if len(args)-i < 2 {
		return nil, errors.New("git passed no remote command")
	}
	cmdline := strings.Join(args[i+1:], " ")
	verb, rest, ok := strings.Cut(cmdline, " ")
	switch verb {
	case "git-upload-pack", "git-receive-pack", "git-upload-archive":
	default:
		return nil, fmt.Errorf("refused remote command %q", verb)
	}
	path, err := sqUnquote(rest)
	if !ok || err != nil {
		return nil, fmt.Errorf("cannot parse git's remote path: %v", err)
	}
	return []string{verb, path}, nil
}

// sqUnquote reverses git's sq_quote: 'a'\”b'\!'c' → a'b!c.
func sqUnquote(s string) (string, error) {
	var b strings.Builder
	for len(s) > 0 {
		switch s[0] {
		case '\'':
			j := strings.IndexByte(s[1:], '\'')
			if j < 0 {
				return "", errors.New("unterminated quote")
			}
			b.WriteString(s[1 : 1+j])
			s = s[j+2:]
		case '\\':
			if len(s) < 2 {
				return "", errors.New("trailing backslash")
			}
			b.WriteByte(s[1])
			s = s[2:]
		default:
			return "", fmt.Errorf("unquoted text %q", s)
		}
	}
	return b.String(), nil
}

func validGitProtocol(v string) bool {
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '=' || r == ':' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return len(v) < 100
}

// GitSSH is the `git-ssh` sub-command: git's GIT_SSH_COMMAND. It returns
// the remote git's exit status.
func GitSSH(ctx context.Context, args []string) int {
	sock, token := os.Getenv(envShimSock), os.Getenv(envShimToken)
	if sock == "" || token == "" {
		fmt.Fprintln(os.Stderr, "mu-plugin-ssh git-ssh: only the running plugin starts this (git transport shim)")
		return 255
	}
	nc, err := (&net.Dialer{}).DialContext(ctx, "unix", sock)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mu-plugin-ssh git-ssh: %v\n", err)
		return 255
	}
	defer nc.Close()
	hello, _ := json.Marshal(shimHello{Token: token, Args: args, GitProtocol: os.Getenv("GIT_PROTOCOL")})
	if _, err := nc.Write(append(hello, '\n')); err != nil {
		fmt.Fprintf(os.Stderr, "mu-plugin-ssh git-ssh: %v\n", err)
		return 255
	}
	go func() {
		_, _ = io.Copy(nc, os.Stdin)
		if uc, ok := nc.(*net.UnixConn); ok {
			_ = uc.CloseWrite()
		}
	}()
	br := bufio.NewReader(nc)
	var hdr [5]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			fmt.Fprintln(os.Stderr, "mu-plugin-ssh git-ssh: the plugin closed the transport")
			return 255
		}
		n := binary.BigEndian.Uint32(hdr[1:])
		var dst io.Writer
		switch hdr[0] {
		case frameStdout:
			dst = os.Stdout
		case frameStderr:
			dst = os.Stderr
		case frameExit:
			var c [1]byte
			if _, err := io.ReadFull(br, c[:]); err != nil {
				return 255
			}
			return int(c[0])
		default:
			return 255
		}
		if _, err := io.CopyN(dst, br, int64(n)); err != nil {
			return 255
		}
	}
}
