package sshlink

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"

	"github.com/mu-org/mu-plugins/protocol"
)

// trust verifies one destination's host key against known_hosts, the way
// OpenSSH does: hashed entries, @cert-authority, @revoked and [host]:port
// come from x/crypto's knownhosts, the algorithm order from skeema's.
type trust struct {
	files      []string // existing known_hosts files
	writeTo    string   // where accept-new appends
	strict     string
	db         *knownhosts.HostKeyDB
	mu         sync.Mutex
	failure    *protocol.Error // the host key verdict, once the callback ran
	knownHosts string          // --known-hosts, when given
}

var appendMu sync.Mutex

// errHostKey and errAuth mark a connection failure's stage (never on the wire).
var (
	errHostKey = errors.New("host key not verified")
	errAuth    = errors.New("authentication refused")
)

// newTrust loads the known_hosts files for r (or knownHostsFlag alone).
func newTrust(r *Resolved, knownHostsFlag string) (*trust, error) {
	t := &trust{strict: r.StrictHostKeyChecking, knownHosts: knownHostsFlag}
	cands := append(append([]string{}, r.UserKnownHostsFiles...), r.GlobalKnownHostsFiles...)
	if knownHostsFlag != "" {
		cands = []string{knownHostsFlag}
	}
	t.writeTo = cands[0]
	for _, f := range cands {
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
			t.files = append(t.files, f)
		}
	}
	if len(t.files) > 0 {
		db, err := knownhosts.NewDB(t.files...)
		if err != nil {
			return nil, protocol.HumanError("fix or remove the malformed line in "+strings.Join(t.files, " or "),
				"cannot read known_hosts: %v", err)
		}
		t.db = db
	}
	return t, nil
}

// algorithms orders the host key algorithms from known_hosts (nil: x/crypto's
// default, when the host is not known yet).
func (t *trust) algorithms(hostport string) []string {
	if t.db == nil {
		return nil
	}
	return t.db.HostKeyAlgorithms(hostport)
}

// callback is the ssh.HostKeyCallback; it records a human verdict.
func (t *trust) callback(alias string) ssh.HostKeyCallback {
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := t.check(hostname, remote, key)
		if err == nil {
			return nil
		}
		perr := t.verdict(alias, hostname, key, err)
		if perr == nil {
			return nil
		}
		perr.Err = errHostKey
		t.mu.Lock()
		t.failure = perr
		t.mu.Unlock()
		return perr
	}
}

func (t *trust) check(hostname string, remote net.Addr, key ssh.PublicKey) error {
	if t.db == nil {
		return &xknownhosts.KeyError{}
	}
	return t.db.HostKeyCallback()(hostname, remote, key)
}

func (t *trust) verdict(alias, hostport string, key ssh.PublicKey, err error) *protocol.Error {
	fp := ssh.FingerprintSHA256(key)
	host, port, _ := net.SplitHostPort(hostport)
	pattern := knownhosts.Normalize(hostport)
	scan := fmt.Sprintf("ssh-keyscan -t %s -p %s %s", keyTypeName(key), port, host)
	file := t.writeTo
	var revoked *xknownhosts.RevokedError
	switch {
	case errors.As(err, &revoked):
		return protocol.HumanError(fmt.Sprintf("the host presents a key marked @revoked in %s (%s): do not connect; ask the host's administrator for its current key", revoked.Revoked.Filename, fp),
			"host key of %s (%s) is revoked", alias, pattern)
	case knownhosts.IsHostKeyChanged(err):
		var ke *xknownhosts.KeyError
		where := file
		if errors.As(err, &ke) && len(ke.Want) > 0 {
			where = fmt.Sprintf("%s:%d", ke.Want[0].Filename, ke.Want[0].Line)
		}
		return protocol.HumanError(fmt.Sprintf("the host now presents %s %s, which does not match %s. "+
			"If the change is expected (verify the fingerprint with the host's administrator), remove the old entry with `ssh-keygen -R '%s' -f %s` and add the new one with `%s >> %s`",
			keyTypeName(key), fp, where, pattern, file, scan, file),
			"HOST KEY CHANGED for %s (%s): refusing to connect", alias, pattern)
	case knownhosts.IsHostUnknown(err):
		if t.strict == "accept-new" || t.strict == "no" {
			if aerr := t.accept(hostport, key); aerr == nil {
				return nil
			} else {
				return protocol.HumanError(fmt.Sprintf("make %s writable, or add the key yourself: `%s >> %s`", file, scan, file),
					"cannot record the new host key of %s: %v", alias, aerr)
			}
		}
		return protocol.HumanError(fmt.Sprintf("the host presents %s %s. Verify this fingerprint with the host's administrator, then add it with `%s >> %s` (or run `ssh %s` once and answer yes)",
			keyTypeName(key), fp, scan, file, alias),
			"host key of %s (%s) is not known", alias, pattern)
	}
	return protocol.HumanError("check the known_hosts files "+strings.Join(t.files, ", "), "host key of %s not verified: %v", alias, err)
}

// accept appends the key for hostport to the user's known_hosts
// (StrictHostKeyChecking accept-new) and reloads.
func (t *trust) accept(hostport string, key ssh.PublicKey) error {
	appendMu.Lock()
	defer appendMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(t.writeTo), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(t.writeTo, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(hostport)}, key)
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// hostKeyFailure returns the recorded human verdict, if the callback refused.
func (t *trust) hostKeyFailure() *protocol.Error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failure
}

func keyTypeName(k ssh.PublicKey) string {
	typ := k.Type()
	if c, ok := k.(*ssh.Certificate); ok {
		typ = c.Key.Type()
	}
	switch {
	case strings.HasPrefix(typ, "ssh-ed25519"):
		return "ed25519"
	case strings.HasPrefix(typ, "ecdsa"):
		return "ecdsa"
	case strings.HasPrefix(typ, "ssh-rsa"):
		return "rsa"
	}
	return typ
}
