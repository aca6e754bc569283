package sshclient

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// OpenSSH's percent tokens (ssh_config(5), TOKENS), as ssh 9.2 expands
// them. Each option accepts its own set.
const (
	// proxyTokens: ProxyCommand (sshconnect.c expand_proxy_command).
	proxyTokens = "hknpr"
	// clientTokens: IdentityAgent, IdentityFile, CertificateFile,
	// ControlPath, UserKnownHostsFile, LocalCommand … (ssh.c
	// DEFAULT_CLIENT_PERCENT_EXPAND_ARGS).
	clientTokens = "CLiklnpdhru"
	// hostNameTokens: HostName.
	hostNameTokens = "h"
)

// tokenValues are what the tokens stand for on one connection.
type tokenValues struct {
	host     string // %h: the HostName
	hostArg  string // %n: the destination as given
	port     int    // %p
	user     string // %r: the remote user
	keyAlias string // %k: HostKeyAlias, else the destination as given
}

func (r *Resolved) tokens() tokenValues {
	k := r.HostKeyAlias
	if k == "" {
		k = r.Alias
	}
	return tokenValues{host: r.HostName, hostArg: r.Alias, port: r.Port, user: r.User, keyAlias: k}
}

// value is one token's text. The local tokens (%C %L %l %i %u %d) are read
// as ssh reads them: the machine's host name, and the account's passwd
// entry (not $HOME).
func (v tokenValues) value(tok byte) string {
	switch tok {
	case 'h':
		return v.host
	case 'n':
		return v.hostArg
	case 'p':
		return strconv.Itoa(v.port)
	case 'r':
		return v.user
	case 'k':
		return v.keyAlias
	case 'l':
		h, _ := os.Hostname()
		return h
	case 'L':
		h, _ := os.Hostname()
		short, _, _ := strings.Cut(h, ".")
		return short
	case 'i':
		return strconv.Itoa(os.Getuid())
	case 'u':
		if u, err := user.Current(); err == nil {
			return u.Username
		}
	case 'd':
		return homeDir()
	case 'C':
		// ssh_connection_hash: SHA-1 of %l %h %p %r, in hex.
		h, _ := os.Hostname()
		sum := sha1.Sum([]byte(h + v.host + strconv.Itoa(v.port) + v.user))
		return hex.EncodeToString(sum[:])
	}
	return ""
}

// expandTokens expands s as OpenSSH's percent_expand does: %% is a
// percent, %X one of allowed, anything else an error naming the token.
// With dollar, ${NAME} is replaced by the environment variable (an unset
// one is an error, as in ssh).
func expandTokens(s, allowed string, v tokenValues, dollar bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case dollar && c == '$' && i+1 < len(s) && s[i+1] == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end <= 0 {
				return "", fmt.Errorf("bad environment variable reference in %q", s)
			}
			name := s[i+2 : i+2+end]
			val, ok := os.LookupEnv(name)
			if !ok {
				return "", fmt.Errorf("environment variable ${%s} has no value", name)
			}
			b.WriteString(val)
			i += 2 + end
		case c != '%':
			b.WriteByte(c)
		case i+1 >= len(s):
			return "", fmt.Errorf("%q ends with a lone %%", s)
		case s[i+1] == '%':
			b.WriteByte('%')
			i++
		case strings.IndexByte(allowed, s[i+1]) >= 0:
			b.WriteString(v.value(s[i+1]))
			i++
		default:
			return "", fmt.Errorf("unknown token %%%c in %q (this option accepts %s)", s[i+1], s, tokenList(allowed))
		}
	}
	return b.String(), nil
}

func tokenList(allowed string) string {
	parts := []string{"%%"}
	for _, c := range allowed {
		parts = append(parts, "%"+string(c))
	}
	return strings.Join(parts, " ")
}

// expandPath is a path option's expansion: ~ and ~user first, then the
// client tokens and ${ENV}, as ssh does for IdentityFile and its kin.
func expandPath(p string, v tokenValues) (string, error) {
	return expandTokens(ExpandTilde(p), clientTokens, v, true)
}

// homeDir is the account's home directory from its passwd entry, as ssh
// reads it (falling back to $HOME).
func homeDir() string {
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		return u.HomeDir
	}
	h, _ := os.UserHomeDir()
	return h
}

// ExpandTilde expands a leading ~ or ~user.
func ExpandTilde(p string) string {
	if !strings.HasPrefix(p, "~") {
		return p
	}
	name, rest, _ := strings.Cut(p[1:], "/")
	home := ""
	if name == "" {
		home = homeDir()
	} else if u, err := user.Lookup(name); err == nil {
		home = u.HomeDir
	}
	if home == "" {
		return p
	}
	return filepath.Join(home, rest)
}
