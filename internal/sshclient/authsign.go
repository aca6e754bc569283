package sshclient

import (
	"io"
	"slices"
	"strings"

	gossh "golang.org/x/crypto/ssh"
)

// restrict limits a signer to the signature algorithms PubkeyAcceptedAlgorithms
// allows for its key type, as ssh does; nil when it allows none (OpenSSH
// then skips the key). An empty list (the library resolver) allows all.
func restrict(s gossh.Signer, accepted []string) gossh.Signer {
	if len(accepted) == 0 {
		return s
	}
	typ := s.PublicKey().Type()
	var algos []string
	for _, a := range accepted {
		if pubKeyAlgs[certBase(a)] && plainKeyType(a) == plainKeyType(typ) && isCertAlgo(a) == isCertAlgo(typ) {
			// x/crypto names a certificate signer's algorithms by the
			// signature under it (ssh-ed25519, rsa-sha2-256).
			algos = append(algos, certBase(a))
		}
	}
	if len(algos) == 0 {
		return nil
	}
	as, ok := s.(gossh.AlgorithmSigner)
	if !ok {
		return s
	}
	if ms, ok := s.(gossh.MultiAlgorithmSigner); ok {
		// Keep the signer's own algorithms that are accepted, in the
		// accepted list's order.
		algos = slices.DeleteFunc(algos, func(a string) bool { return !slices.Contains(ms.Algorithms(), a) })
		if len(algos) == 0 {
			return nil
		}
	}
	r, err := gossh.NewSignerWithAlgorithms(as, algos)
	if err != nil {
		return s
	}
	return r
}

// recording is a signer that notes when the server accepted its key:
// x/crypto asks for a signature only after the server said the key is
// acceptable (the publickey query), so the signing key is the one that
// authenticated.
type recording struct {
	gossh.Signer
	name string
	a    *auth
}

func (k *recording) note() {
	k.a.mu.Lock()
	k.a.accepted = k.name + " (" + strings.ToUpper(KeyTypeName(k.PublicKey())) + " " + gossh.FingerprintSHA256(k.PublicKey()) + ")"
	k.a.mu.Unlock()
}

func (k *recording) Sign(rand io.Reader, data []byte) (*gossh.Signature, error) {
	k.note()
	return k.Signer.Sign(rand, data)
}

func (k *recording) SignWithAlgorithm(rand io.Reader, data []byte, algorithm string) (*gossh.Signature, error) {
	k.note()
	if as, ok := k.Signer.(gossh.AlgorithmSigner); ok {
		return as.SignWithAlgorithm(rand, data, algorithm)
	}
	return k.Signer.Sign(rand, data)
}

// Algorithms is the inner signer's, so x/crypto picks the same
// signature algorithm (rsa-sha2-256/512 for RSA keys) as without the
// wrapper.
func (k *recording) Algorithms() []string {
	if ms, ok := k.Signer.(gossh.MultiAlgorithmSigner); ok {
		return ms.Algorithms()
	}
	return defaultAlgorithms(k.PublicKey().Type())
}

// defaultAlgorithms mirrors x/crypto's algorithmsForKeyFormat of the
// underlying key format (a certificate signs with its key's algorithms).
func defaultAlgorithms(typ string) []string {
	if b := certBase(typ); b == gossh.KeyAlgoRSA {
		return []string{gossh.KeyAlgoRSASHA256, gossh.KeyAlgoRSASHA512, gossh.KeyAlgoRSA}
	} else {
		return []string{b}
	}
}

// certBase is the signature algorithm under a certificate algorithm:
// rsa-sha2-512-cert-v01@openssh.com → rsa-sha2-512.
func certBase(a string) string {
	if !isCertAlgo(a) {
		return a
	}
	b := strings.TrimSuffix(a, "-cert-v01@openssh.com")
	if strings.HasPrefix(b, "sk-") {
		b += "@openssh.com"
	}
	return b
}
