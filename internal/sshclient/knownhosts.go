package sshclient

import (
	"bytes"
	"crypto/rsa"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/skeema/knownhosts"
	gossh "golang.org/x/crypto/ssh"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"

	"github.com/mu-org/mu-plugins/protocol"
)

// trust verifies one destination's host key against known_hosts, the way
// OpenSSH does: hashed entries, @cert-authority, @revoked and [host]:port
// come from x/crypto's knownhosts, the algorithm order is OpenSSH's
// (order_hostkeyalgs), HostKeyAlias names the entry to look up.
type trust struct {
	r          *Resolved
	files      []string // existing known_hosts files
	writeTo    string   // where accept-new appends
	db         *knownhosts.HostKeyDB
	knownHosts string // --known-hosts, when given
	direct     bool   // reached over plain TCP: ssh-keyscan can reach it too
	sshCmd     string // `ssh … ALIAS`, for remedies

	mu      sync.Mutex
	failure *protocol.Error // the host key verdict, once the callback ran
	key     gossh.PublicKey // the key the host presented
	how     string          // how it was verified
}

var appendMu sync.Mutex

// ErrHostKey and ErrAuth mark a connection failure's stage (never on the wire).
var (
	ErrHostKey = errors.New("host key not verified")
	ErrAuth    = errors.New("authentication refused")
)

// newTrust loads the known_hosts files for r (or knownHostsFlag alone).
func newTrust(r *Resolved, knownHostsFlag string) (*trust, error) {
	t := &trust{r: r, knownHosts: knownHostsFlag}
	cands := append(append([]string{}, r.UserKnownHostsFiles...), r.GlobalKnownHostsFiles...)
	if knownHostsFlag != "" {
		cands = []string{knownHostsFlag}
	}
	if len(cands) > 0 {
		t.writeTo = cands[0]
	}
	for _, f := range cands {
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
			t.files = append(t.files, f)
		}
	}
	if len(t.files) > 0 {
		db, err := knownhosts.NewDB(t.files...)
		if err != nil {
			return nil, protocol.HumanError("fix or remove the malformed line in "+strings.Join(t.shownFiles(), " or "),
				"cannot read known_hosts: %v", err)
		}
		t.db = db
	}
	return t, nil
}

// hostKeyAddr is the name r's host key is looked up under, as host:port:
// HostKeyAlias (which OpenSSH looks up without a port, that is as port
// 22), else HostName and Port.
func hostKeyAddr(r *Resolved) string {
	if r.HostKeyAlias != "" {
		return joinHostPort(r.HostKeyAlias, 22)
	}
	return r.Addr()
}

// pattern is the known_hosts name of the host: "host", "[host]:port" or
// the alias.
func (t *trust) pattern() string { return knownhosts.Normalize(hostKeyAddr(t.r)) }

// algorithms is HostKeyAlgorithms as OpenSSH offers it: the configured
// list (or OpenSSH's default), only what x/crypto implements, with the
// key types known_hosts holds for the host first unless the list was set
// outright. So a first contact shows the key `ssh` would, and a host known
// by one key type is never refused for presenting another.
func (t *trust) algorithms() []string {
	list := supportedOnly(t.r.HostKeyAlgorithms, hostKeyAlgs)
	if len(list) == 0 {
		list = supportedOnly(strings.Split(libDefaultHostKeyAlgorithms, ","), hostKeyAlgs)
	}
	if !t.r.KnownHostsOrder || t.db == nil {
		return list
	}
	keys := t.db.HostKeys(hostKeyAddr(t.r))
	if len(keys) == 0 {
		return list
	}
	plain, ca := map[string]bool{}, false
	for _, k := range keys {
		if k.Cert {
			ca = true
		} else {
			plain[k.Type()] = true
		}
	}
	if plain[plainKeyType(list[0])] {
		return list
	}
	var first, last []string
	for _, a := range list {
		if isCertAlgo(a) && ca || plain[plainKeyType(a)] {
			first = append(first, a)
		} else {
			last = append(last, a)
		}
	}
	return append(first, last...)
}

// callback is the gossh.HostKeyCallback; it records a human verdict.
func (t *trust) callback() gossh.HostKeyCallback {
	return func(hostname string, remote net.Addr, key gossh.PublicKey) error {
		t.mu.Lock()
		t.key = key
		t.mu.Unlock()
		err := t.check(hostname, remote, key)
		if err == nil {
			return nil
		}
		perr := t.verdict(key, err)
		if perr == nil {
			return nil
		}
		perr.Err = ErrHostKey
		t.mu.Lock()
		t.failure = perr
		t.mu.Unlock()
		return perr
	}
}

func (t *trust) check(hostname string, remote net.Addr, key gossh.PublicKey) error {
	if err := rsaSizeOK(key, t.r.RequiredRSASize); err != nil {
		return err
	}
	if t.db == nil {
		return &xknownhosts.KeyError{}
	}
	err := t.db.HostKeyCallback()(hostname, remote, key)
	if cert, ok := key.(*gossh.Certificate); ok && err != nil && !isRevoked(err) {
		// No @cert-authority vouches for the certificate: OpenSSH then
		// checks its plain key against known_hosts, and so do we.
		if plainErr := t.db.HostKeyCallback()(hostname, remote, cert.Key); plainErr == nil || !knownhosts.IsHostUnknown(plainErr) {
			return plainErr
		}
	}
	if err == nil {
		how := "verified against known_hosts"
		if _, ok := key.(*gossh.Certificate); ok {
			how = "certificate verified against a @cert-authority in known_hosts"
		} else if w := t.whereKnown(hostname, remote, key); w != "" {
			how += " (" + w + ")"
		}
		t.setHow(how)
	}
	return err
}

// whereKnown names the known_hosts line that holds key for hostname: a
// lookup with a key no line holds lists them all, with their places.
func (t *trust) whereKnown(hostname string, remote net.Addr, key gossh.PublicKey) string {
	var ke *xknownhosts.KeyError
	if err := t.db.HostKeyCallback()(hostname, remote, noKey{}); errors.As(err, &ke) {
		for _, w := range ke.Want {
			if bytes.Equal(w.Key.Marshal(), key.Marshal()) {
				return fmt.Sprintf("%s line %d", t.r.show(w.Filename), w.Line)
			}
		}
	}
	return ""
}

// noKey is a public key no known_hosts line holds.
type noKey struct{}

func (noKey) Type() string                          { return "mu-no-key" }
func (noKey) Marshal() []byte                       { return []byte("mu-no-key") }
func (noKey) Verify([]byte, *gossh.Signature) error { return errors.New("no key") }

func (t *trust) setHow(how string) {
	t.mu.Lock()
	t.how = how
	t.mu.Unlock()
}

func isRevoked(err error) bool {
	var re *xknownhosts.RevokedError
	return errors.As(err, &re)
}

// errRSASize is RequiredRSASize's refusal.
type errRSASize struct{ bits, min int }

func (e errRSASize) Error() string {
	return fmt.Sprintf("RSA key of %d bits is below RequiredRSASize %d", e.bits, e.min)
}

func rsaSizeOK(key gossh.PublicKey, min int) error {
	if c, ok := key.(*gossh.Certificate); ok {
		key = c.Key
	}
	if ck, ok := key.(gossh.CryptoPublicKey); ok {
		if pk, ok := ck.CryptoPublicKey().(*rsa.PublicKey); ok && pk.N.BitLen() < min {
			return errRSASize{pk.N.BitLen(), min}
		}
	}
	return nil
}

func (t *trust) verdict(key gossh.PublicKey, err error) *protocol.Error {
	alias := SafeName(t.r.Alias)
	fp := fingerprint(key, t.r.FingerprintHash)
	pattern := t.pattern()
	file := t.r.show(t.writeTo)
	add := t.addRemedy(key)
	var revoked *xknownhosts.RevokedError
	var small errRSASize
	switch {
	case errors.As(err, &small):
		return protocol.HumanError("ask the host's administrator for a larger RSA host key (or an ed25519 one); ssh refuses this one too",
			"host key of %s (%s): %v", alias, pattern, err)
	case errors.As(err, &revoked):
		return protocol.HumanError(fmt.Sprintf("the host presents a key marked @revoked in %s (%s): do not connect; ask the host's administrator for its current key", t.r.show(revoked.Revoked.Filename), fp),
			"host key of %s (%s) is revoked", alias, pattern)
	case knownhosts.IsHostKeyChanged(err):
		var ke *xknownhosts.KeyError
		where := file
		if errors.As(err, &ke) && len(ke.Want) > 0 {
			where = fmt.Sprintf("%s:%d", t.r.show(ke.Want[0].Filename), ke.Want[0].Line)
		}
		return protocol.HumanError(fmt.Sprintf("the host now presents %s %s, which does not match %s. "+
			"If the change is expected (verify the fingerprint with the host's administrator), remove the old entry with `ssh-keygen -R '%s' -f %s` and %s",
			KeyTypeName(key), fp, where, pattern, file, add),
			"HOST KEY CHANGED for %s (%s): refusing to connect", alias, pattern)
	case knownhosts.IsHostUnknown(err):
		if t.r.StrictHostKeyChecking == "accept-new" || t.r.StrictHostKeyChecking == "no" {
			aerr := t.accept(key)
			if aerr == nil {
				return nil
			}
			return protocol.HumanError(fmt.Sprintf("make %s writable, or %s", file, add),
				"cannot record the new host key of %s: %v", alias, aerr)
		}
		more := ""
		if t.r.get("verifyhostkeydns") == "true" || t.r.get("verifyhostkeydns") == "yes" {
			more = fmt.Sprintf(" (VerifyHostKeyDNS, %s, is not done by the plugin: it reads no SSHFP records)", t.r.Where("VerifyHostKeyDNS"))
		}
		cmd := t.sshCmd // ssh would refuse without asking under these; the first -o wins
		if b := t.r.get("batchmode"); b == "yes" || b == "true" {
			cmd = "ssh -o BatchMode=no" + strings.TrimPrefix(cmd, "ssh")
		}
		if t.r.StrictHostKeyChecking == "yes" {
			cmd = "ssh -o StrictHostKeyChecking=ask" + strings.TrimPrefix(cmd, "ssh")
		}
		return protocol.HumanError(fmt.Sprintf("the host presents %s %s. Verify this fingerprint with the host's administrator, then %s (or run `%s` once and answer yes)",
			KeyTypeName(key), fp, add, cmd),
			"host key of %s (%s) is not known%s", alias, pattern, more)
	}
	return protocol.HumanError("check the known_hosts files "+strings.Join(t.shownFiles(), ", "), "host key of %s not verified: %v", alias, err)
}

// shownFiles are the known_hosts files as messages show them.
func (t *trust) shownFiles() []string {
	out := make([]string, len(t.files))
	for i, f := range t.files {
		out[i] = t.r.show(f)
	}
	return out
}

// addRemedy says how to add the key: ssh-keyscan where it can reach the
// host as we do, else the exact line to append.
func (t *trust) addRemedy(key gossh.PublicKey) string {
	if t.direct && t.r.HostKeyAlias == "" {
		h := ""
		if t.r.HashKnownHosts {
			h = "-H "
		}
		return fmt.Sprintf("add it with `ssh-keyscan %s-t %s -p %d %s >> %s`", h, KeyTypeName(key), t.r.Port, t.r.HostName, t.r.show(t.writeTo))
	}
	return fmt.Sprintf("append this line to %s: `%s`", t.r.show(t.writeTo), knownHostsLine(t.pattern(), key, false))
}

// knownHostsLine is the line OpenSSH writes for a new host: the pattern
// (hashed with HashKnownHosts), the key type and the key.
func knownHostsLine(pattern string, key gossh.PublicKey, hashed bool) string {
	if hashed {
		pattern = xknownhosts.HashHostname(pattern)
	}
	return knownhosts.Line([]string{pattern}, key)
}

// accept appends the key to the user's known_hosts (StrictHostKeyChecking
// accept-new) as OpenSSH writes it: under the alias or [host]:port, hashed
// when HashKnownHosts is yes.
func (t *trust) accept(key gossh.PublicKey) error {
	if t.writeTo == "" {
		return errors.New("no known_hosts file is configured")
	}
	appendMu.Lock()
	defer appendMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(t.writeTo), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(t.writeTo, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(knownHostsLine(t.pattern(), key, t.r.HashKnownHosts) + "\n"); err != nil {
		f.Close()
		return err
	}
	t.setHow("new: recorded in " + t.r.show(t.writeTo) + " (StrictHostKeyChecking " + t.r.StrictHostKeyChecking + ")")
	return f.Close()
}

// hostKeyFailure returns the recorded human verdict, if the callback refused.
func (t *trust) hostKeyFailure() *protocol.Error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failure
}

// presented is the key the host presented and how it was verified.
func (t *trust) presented() (gossh.PublicKey, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.key, t.how
}

// fingerprint prints a key's fingerprint as ssh does under FingerprintHash.
func fingerprint(k gossh.PublicKey, hash string) string {
	if hash == "md5" {
		return "MD5:" + gossh.FingerprintLegacyMD5(k)
	}
	return gossh.FingerprintSHA256(k)
}

// KeyTypeName is a key's type as ssh-keygen and ssh-keyscan -t name it: ed25519, ecdsa, rsa.
func KeyTypeName(k gossh.PublicKey) string {
	typ := k.Type()
	if c, ok := k.(*gossh.Certificate); ok {
		typ = c.Key.Type()
	}
	switch {
	case strings.Contains(typ, "ed25519"):
		return "ed25519"
	case strings.Contains(typ, "ecdsa"):
		return "ecdsa"
	case strings.HasPrefix(typ, "ssh-rsa"):
		return "rsa"
	}
	return typ
}

// plainKeyType is the key type an algorithm signs with:
// rsa-sha2-512-cert-v01@openssh.com → ssh-rsa.
func plainKeyType(algo string) string {
	a := strings.TrimSuffix(algo, "-cert-v01@openssh.com")
	switch {
	case a == "rsa-sha2-256" || a == "rsa-sha2-512":
		return gossh.KeyAlgoRSA
	case a != algo && strings.HasPrefix(a, "sk-"):
		return a + "@openssh.com"
	}
	return a
}

func isCertAlgo(a string) bool { return strings.HasSuffix(a, "-cert-v01@openssh.com") }
