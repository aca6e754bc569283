package sshclient

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/mu-org/mu-plugins/protocol"
)

// maxKeys keeps the offered keys under OpenSSH's default MaxAuthTries (6).
const maxKeys = 5

// identity is one key the plugin may offer, in OpenSSH's terms.
type identity struct {
	name  string          // the file, or "agent key TYPE FP (comment)"
	pub   gossh.PublicKey // may be a certificate; nil: the file has no readable public key
	file  string          // the private key file ("" for agent keys)
	agent bool            // the agent holds it
}

// auth gathers one destination's publickey signers in OpenSSH's order
// (sshconnect2.c pubkey_prepare): CertificateFile certificates, then the
// configured keys the agent holds, then the agent's other keys (unless
// IdentitiesOnly), then the configured keys read from their files. One
// callback: x/crypto tries only the first method of each name.
type auth struct {
	signers  []gossh.Signer
	tried    []string // names of the offered keys, for the remedy
	locked   []string // passphrase-protected files whose key is not in the agent
	agentErr string   // why the configured agent could not be used
	agentSrc string   // which agent: "$SSH_AUTH_SOCK", "IdentityAgent (FILE line N)", "none"
	agent    net.Conn
	agentN   int // the keys the agent listed (-1: no agent reached)

	mu       sync.Mutex
	accepted string // the key the server accepted (it asked for its signature)
}

func newAuth(r *Resolved, identityFlag string) *auth {
	a := &auth{agentN: -1}
	ag, agentKeys := a.openAgent(r)
	var ids []identity
	files := r.IdentityFiles
	if identityFlag != "" {
		files = append([]string{identityFlag}, files...)
	}
	for _, f := range files {
		ids = append(ids, identity{name: r.show(f), pub: loadPublic(f), file: f})
		if len(r.CertificateFiles) == 0 { // OpenSSH tries FILE-cert only without CertificateFile
			if c, ok := loadPublic(f + "-cert").(*gossh.Certificate); ok && c.CertType == gossh.UserCert {
				ids = append(ids, identity{name: r.show(f) + "-cert.pub", pub: c, file: f})
			}
		}
	}
	var preferred []identity
	for _, cf := range r.CertificateFiles {
		if c, ok := loadPublic(cf).(*gossh.Certificate); ok && c.CertType == gossh.UserCert {
			preferred = append(preferred, identity{name: r.show(cf), pub: c})
		}
	}
	var agentOnly []identity
	for _, ak := range agentKeys {
		k, err := gossh.ParsePublicKey(ak.Blob)
		if err != nil || rsaSizeOK(k, r.RequiredRSASize) != nil {
			continue
		}
		if i := indexKey(ids, k); i >= 0 {
			id := ids[i]
			id.agent = true
			preferred = append(preferred, id)
			ids = append(ids[:i], ids[i+1:]...)
		} else if !r.IdentitiesOnly {
			agentOnly = append(agentOnly, identity{name: agentKeyName(k, ak.Comment), pub: k, agent: true})
		}
	}
	all := append(append(preferred, agentOnly...), ids...)
	a.build(r, all, ag)
	return a
}

// openAgent connects to the agent OpenSSH would use: IdentityAgent
// (a path, $VAR, SSH_AUTH_SOCK or none), else $SSH_AUTH_SOCK.
func (a *auth) openAgent(r *Resolved) (agent.ExtendedAgent, []*agent.Key) {
	sock, src := os.Getenv("SSH_AUTH_SOCK"), "$SSH_AUTH_SOCK"
	switch v := r.IdentityAgent; {
	case v == "" || v == "SSH_AUTH_SOCK":
	case strings.EqualFold(v, "none"):
		a.agentSrc = "none (IdentityAgent none)"
		return nil, nil
	case strings.HasPrefix(v, "$") && !strings.HasPrefix(v, "${"):
		sock, src = os.Getenv(v[1:]), "IdentityAgent "+v+" ("+r.Where("IdentityAgent")+")"
	default:
		sock, src = v, "IdentityAgent "+r.show(v)+" ("+r.Where("IdentityAgent")+")"
	}
	a.agentSrc = src
	if sock == "" {
		if src != "$SSH_AUTH_SOCK" {
			a.agentErr = "the agent named by " + src + " is not set"
		}
		a.agentSrc = "none (" + strings.TrimPrefix(src, "$") + " is not set)"
		return nil, nil
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		a.agentErr = fmt.Sprintf("cannot reach the agent at %s: %v", src, scrubPath(err, sock))
		return nil, nil
	}
	a.agent = c
	ag := agent.NewClient(c)
	keys, err := ag.List()
	if err != nil {
		a.agentErr = fmt.Sprintf("the agent at %s did not list its keys: %v", src, err)
		return nil, nil
	}
	a.agentN = len(keys)
	return ag, keys
}

// scrubPath keeps an environment value (the socket path) out of an error.
func scrubPath(err error, path string) string {
	return strings.ReplaceAll(err.Error(), path, "its socket")
}

// build makes the signers, filtered by PubkeyAcceptedAlgorithms, at most
// maxKeys of them.
func (a *auth) build(r *Resolved, ids []identity, ag agent.ExtendedAgent) {
	agentSigners := map[string]gossh.Signer{}
	if ag != nil {
		if ss, err := ag.Signers(); err == nil {
			for _, s := range ss {
				agentSigners[string(s.PublicKey().Marshal())] = s
			}
		}
	}
	fromFile := func(file string, pub gossh.PublicKey) gossh.Signer {
		s, locked := loadPrivate(file, pub)
		if locked {
			a.locked = appendNew(a.locked, r.show(file))
		}
		return s
	}
	// A certificate signs with its key as OpenSSH finds it: a listed
	// identity with the same key (through the agent when the agent holds
	// it), else the certificate's own private key file (FILE-cert.pub).
	plainFor := func(pub gossh.PublicKey, file string) gossh.Signer {
		for _, o := range ids {
			if _, c := o.pub.(*gossh.Certificate); o.pub == nil || c || !bytes.Equal(o.pub.Marshal(), pub.Marshal()) {
				continue
			}
			if o.agent {
				return agentSigners[string(pub.Marshal())]
			}
			return fromFile(o.file, pub)
		}
		if file != "" {
			return fromFile(file, pub)
		}
		return nil
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if len(a.signers) >= maxKeys {
			break
		}
		var s gossh.Signer
		switch cert, isCert := id.pub.(*gossh.Certificate); {
		case id.agent:
			s = agentSigners[string(id.pub.Marshal())]
		case isCert:
			if base := plainFor(cert.Key, id.file); base != nil {
				s, _ = gossh.NewCertSigner(cert, base)
			}
		case id.pub == nil && id.file != "":
			s, _ = loadPrivate(id.file, nil)
			if s == nil && fileExists(id.file) {
				a.locked = appendNew(a.locked, r.show(id.file))
			}
		default:
			s = fromFile(id.file, id.pub)
		}
		if s == nil || seen[string(s.PublicKey().Marshal())] {
			continue
		}
		s = restrict(s, r.PubkeyAcceptedAlgorithms)
		if s == nil {
			continue
		}
		seen[string(s.PublicKey().Marshal())] = true
		name := id.name
		if id.agent && id.file != "" {
			name += " (in the agent)"
		}
		a.signers = append(a.signers, &recording{Signer: s, name: name, a: a})
		a.tried = append(a.tried, name)
	}
}

func indexKey(ids []identity, k gossh.PublicKey) int {
	for i, id := range ids {
		if id.pub != nil && bytes.Equal(id.pub.Marshal(), k.Marshal()) {
			return i
		}
	}
	return -1
}

func agentKeyName(k gossh.PublicKey, comment string) string {
	n := "agent key " + strings.ToUpper(KeyTypeName(k)) + " " + gossh.FingerprintSHA256(k)
	if comment != "" {
		n += " (" + SafeName(comment) + ")"
	}
	return n
}

// loadPublic reads a key's public half as ssh does: FILE.pub, FILE itself
// when it is a public key, or the public half of an unencrypted or
// OpenSSH-format private key.
func loadPublic(f string) gossh.PublicKey {
	if k := readPub(f + ".pub"); k != nil {
		return k
	}
	if k := readPub(f); k != nil {
		return k
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return nil
	}
	s, err := gossh.ParsePrivateKey(b)
	var pm *gossh.PassphraseMissingError
	switch {
	case err == nil:
		return s.PublicKey()
	case errors.As(err, &pm) && pm.PublicKey != nil:
		return pm.PublicKey
	}
	return nil
}

// loadPrivate reads an unencrypted private key; locked is true when it is
// passphrase-protected (the plugin never asks for a passphrase).
func loadPrivate(f string, want gossh.PublicKey) (s gossh.Signer, locked bool) {
	b, err := os.ReadFile(f)
	if err != nil {
		return nil, false
	}
	s, err = gossh.ParsePrivateKey(b)
	var pm *gossh.PassphraseMissingError
	switch {
	case errors.As(err, &pm):
		return nil, true
	case err != nil:
		return nil, false
	case want != nil && !bytes.Equal(s.PublicKey().Marshal(), want.Marshal()):
		return nil, false
	}
	return s, false
}

func fileExists(f string) bool {
	_, err := os.Stat(f)
	return err == nil
}

func (a *auth) methods() []gossh.AuthMethod {
	return []gossh.AuthMethod{gossh.PublicKeysCallback(func() ([]gossh.Signer, error) { return a.signers, nil })}
}

func (a *auth) close() {
	if a.agent != nil {
		a.agent.Close()
	}
}

// acceptedKey names the key the server accepted.
func (a *auth) acceptedKey() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.accepted
}

// failure turns an authentication refusal into a hand-back; copyID is the
// ssh-copy-id command line for the registration (key and destination to
// be added).
func (a *auth) failure(r *Resolved, err error, copyID func(key string) string) *protocol.Error {
	e := a.failureText(r, err, copyID)
	if a.agentErr != "" {
		e.Message += "; " + a.agentErr
	}
	if nd := r.authNotDone(); nd != "" {
		e.Message += "; " + nd
	}
	return e
}

func (a *auth) failureText(r *Resolved, err error, copyID func(key string) string) *protocol.Error {
	target := fmt.Sprintf("%s@%s", r.User, r.HostName)
	if len(a.locked) > 0 {
		return protocol.HumanError(fmt.Sprintf("load the key into ssh-agent first: `ssh-add %s` (the agent must be reachable from where mu runs: %s)", a.locked[0], a.agentSrc),
			"%s refused the keys offered, and %s is passphrase-protected and not in ssh-agent", target, strings.Join(a.locked, ", "))
	}
	if len(a.signers) == 0 {
		return a.noKey(r, target, copyID)
	}
	more := ""
	if !r.IdentitiesOnly && len(a.tried) >= maxKeys {
		more = "; or set IdentitiesOnly yes for this host so only its IdentityFile is offered"
	}
	return protocol.HumanError(fmt.Sprintf("install one of these keys in %s's ~/.ssh/authorized_keys on the host (`%s`), or pass %s with the right key%s", r.User, copyID("KEY"), FlagName(r.flagPrefix, "identity"), more),
		"%s refused the keys offered (%s): %v", target, strings.Join(a.tried, ", "), err)
}

// noKey is the hand-back when no key could be offered: it names the
// configured IdentityFile (and whether it exists) and says when the agent
// is empty, and its remedy loads or creates that file.
func (a *auth) noKey(r *Resolved, target string, copyID func(key string) string) *protocol.Error {
	var why []string
	key := "~/.ssh/id_ed25519"
	for i, f := range r.IdentityFiles {
		state := "cannot be used"
		if !fileExists(f) {
			state = "does not exist"
		}
		why = append(why, fmt.Sprintf("IdentityFile %s %s", r.show(f), state))
		if i == 0 {
			key = r.show(f)
		}
	}
	if len(r.IdentityFiles) > 0 {
		why[len(why)-1] += " (" + r.Where("IdentityFile") + ")"
	}
	if a.agentN == 0 {
		why = append(why, "the agent at "+a.agentSrc+" holds no keys")
	} else if a.agentN < 0 && a.agentErr == "" {
		why = append(why, "no agent: "+a.agentSrc)
	}
	return protocol.HumanError(fmt.Sprintf("load the key into the agent (`ssh-add %s`; the agent used: %s), or create it (`ssh-keygen -t ed25519 -f %s`) and install it on the host (`%s`), or pass %s with a key the host accepts",
		key, a.agentSrc, key, copyID(key), FlagName(r.flagPrefix, "identity")),
		"no SSH key to offer to %s: %s", target, strings.Join(why, "; "))
}

// kerberosTicket reports whether a Kerberos credential cache is at hand,
// the only case where ssh's GSSAPIAuthentication could log in.
func kerberosTicket() bool {
	if os.Getenv("KRB5CCNAME") != "" {
		return true
	}
	_, err := os.Stat(fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid()))
	return err == nil
}

// authNotDone names the authentication methods the config enables that
// the plugin does not use, where they could matter: GSSAPI only with a
// Kerberos ticket (Debian's stock ssh_config enables it for everyone).
func (r *Resolved) authNotDone() string {
	var on []string
	for _, k := range []string{"gssapiauthentication", "hostbasedauthentication"} {
		if r.get(k) == "yes" && (k != "gssapiauthentication" || kerberosTicket()) {
			on = append(on, optionPolicies[k].name)
		}
	}
	if len(on) == 0 {
		return ""
	}
	return "ssh could also try " + strings.Join(on, " and ") + ", which the plugin does not (public keys only)"
}

func readPub(path string) gossh.PublicKey {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	k, _, _, _, err := gossh.ParseAuthorizedKey(b)
	if err != nil {
		return nil
	}
	return k
}
