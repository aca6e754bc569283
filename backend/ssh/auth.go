package sshlink

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/mu-org/mu-plugins/protocol"
)

// maxKeys keeps the offered keys under OpenSSH's default MaxAuthTries (6).
const maxKeys = 5

// auth gathers one destination's publickey signers: identity files first
// (each with its certificate), then ssh-agent's keys, in ONE callback since
// x/crypto tries only the first method of each name.
type auth struct {
	signers []ssh.Signer
	tried   []string // names of the offered keys, for the remedy
	locked  []string // passphrase-protected files whose key is not in the agent
	agent   net.Conn
}

func newAuth(r *Resolved, identityFlag string) *auth {
	a := &auth{}
	var agentSigners []ssh.Signer
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" {
		if c, err := net.Dial("unix", sock); err == nil {
			a.agent = c
			agentSigners, _ = agent.NewClient(c).Signers()
		}
	}
	inAgent := func(pub ssh.PublicKey) ssh.Signer {
		for _, s := range agentSigners {
			if bytes.Equal(s.PublicKey().Marshal(), pub.Marshal()) {
				return s
			}
		}
		return nil
	}
	files := r.IdentityFiles
	if identityFlag != "" {
		files = append([]string{identityFlag}, files...)
	}
	used := map[string]bool{}
	add := func(s ssh.Signer, name string) {
		k := string(s.PublicKey().Marshal())
		if used[k] || len(a.signers) >= maxKeys {
			return
		}
		used[k] = true
		a.signers = append(a.signers, s)
		a.tried = append(a.tried, name)
	}
	var filePubs []ssh.PublicKey
	for _, f := range files {
		pem, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var signer ssh.Signer
		s, err := ssh.ParsePrivateKey(pem)
		var pm *ssh.PassphraseMissingError
		switch {
		case err == nil:
			signer = s
		case errors.As(err, &pm):
			pub := pm.PublicKey
			if pub == nil {
				pub = readPub(f + ".pub")
			}
			if pub != nil {
				signer = inAgent(pub)
			}
			if signer == nil {
				a.locked = append(a.locked, f)
				continue
			}
		default:
			continue
		}
		filePubs = append(filePubs, signer.PublicKey())
		for _, cf := range append(append([]string{}, r.CertificateFiles...), f+"-cert.pub") {
			if cert, ok := readPub(cf).(*ssh.Certificate); ok && bytes.Equal(cert.Key.Marshal(), signer.PublicKey().Marshal()) {
				if cs, err := ssh.NewCertSigner(cert, signer); err == nil {
					add(cs, cf)
				}
			}
		}
		add(signer, f)
	}
	for _, s := range agentSigners {
		if r.IdentitiesOnly && identityFlag == "" {
			match := false
			for _, p := range filePubs {
				match = match || bytes.Equal(p.Marshal(), s.PublicKey().Marshal())
			}
			if !match {
				continue
			}
		}
		add(s, "agent key "+ssh.FingerprintSHA256(s.PublicKey()))
	}
	return a
}

func (a *auth) methods() []ssh.AuthMethod {
	return []ssh.AuthMethod{ssh.PublicKeysCallback(func() ([]ssh.Signer, error) { return a.signers, nil })}
}

func (a *auth) close() {
	if a.agent != nil {
		a.agent.Close()
	}
}

// failure turns an authentication refusal into a hand-back.
func (a *auth) failure(r *Resolved, err error) *protocol.Error {
	e := a.failureText(r, err)
	e.Err = errAuth
	return e
}

func (a *auth) failureText(r *Resolved, err error) *protocol.Error {
	target := fmt.Sprintf("%s@%s", r.User, r.HostName)
	if len(a.locked) > 0 {
		return protocol.HumanError(fmt.Sprintf("load the key into ssh-agent first: `ssh-add %s` (SSH_AUTH_SOCK must reach the agent from where mu runs)", a.locked[0]),
			"%s refused the keys offered, and %s is passphrase-protected and not in ssh-agent", target, strings.Join(a.locked, ", "))
	}
	if len(a.signers) == 0 {
		return protocol.HumanError("create a key (`ssh-keygen -t ed25519`) and install it on the host (`ssh-copy-id "+target+"`), or pass --identity, or start ssh-agent with your key loaded",
			"no SSH key to offer to %s", target)
	}
	return protocol.HumanError(fmt.Sprintf("install one of these keys in %s's ~/.ssh/authorized_keys on the host (`ssh-copy-id -i KEY -p %d %s`), or pass --identity with the right key", r.User, r.Port, target),
		"%s refused the keys offered (%s): %v", target, strings.Join(a.tried, ", "), err)
}

func readPub(path string) ssh.PublicKey {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	k, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		return nil
	}
	return k
}
