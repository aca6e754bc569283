package sshclient

import (
	"slices"
	"strings"

	gossh "golang.org/x/crypto/ssh"
)

// What x/crypto/ssh implements, secure or not: the configured lists are
// offered in their own order, less what the plugin cannot speak.
var (
	kexAlgs     = implemented(func(a gossh.Algorithms) []string { return a.KeyExchanges }, "curve25519-sha256@libssh.org")
	cipherAlgs  = implemented(func(a gossh.Algorithms) []string { return a.Ciphers })
	macAlgs     = implemented(func(a gossh.Algorithms) []string { return a.MACs })
	hostKeyAlgs = implemented(func(a gossh.Algorithms) []string { return a.HostKeys })
	pubKeyAlgs  = implemented(func(a gossh.Algorithms) []string { return a.PublicKeyAuths })
)

func implemented(pick func(gossh.Algorithms) []string, extra ...string) map[string]bool {
	m := map[string]bool{}
	for _, a := range slices.Concat(pick(gossh.SupportedAlgorithms()), pick(gossh.InsecureAlgorithms()), extra) {
		m[a] = true
	}
	return m
}

// supportedOnly keeps the algorithms of list the plugin implements, in
// list's order.
func supportedOnly(list []string, impl map[string]bool) []string {
	var out []string
	for _, a := range list {
		if impl[a] {
			out = append(out, a)
		}
	}
	return out
}

// algorithmPlan is what the plugin offers for one connection, from the
// resolved lists, and what it had to leave out of them.
type algorithmPlan struct {
	kex, ciphers, macs []string
	missing            []string // "Option: algo" the plugin lacks, for the log
}

// plan filters r's KexAlgorithms, Ciphers and MACs to what x/crypto speaks.
// A list none of whose algorithms the plugin speaks is a hand-back: the
// plugin could not connect as ssh does.
func (r *Resolved) plan() (algorithmPlan, error) {
	var p algorithmPlan
	for _, o := range []struct {
		name string
		list []string
		impl map[string]bool
		dst  *[]string
	}{
		{"KexAlgorithms", r.KexAlgorithms, kexAlgs, &p.kex},
		{"Ciphers", r.Ciphers, cipherAlgs, &p.ciphers},
		{"MACs", r.MACs, macAlgs, &p.macs},
		{"HostKeyAlgorithms", r.HostKeyAlgorithms, hostKeyAlgs, new([]string)},
	} {
		if len(o.list) == 0 {
			continue
		}
		*o.dst = supportedOnly(o.list, o.impl)
		for _, a := range o.list {
			if !o.impl[a] {
				p.missing = append(p.missing, o.name+": "+a)
			}
		}
		if len(*o.dst) == 0 {
			return p, r.refusal(o.name, strings.Join(o.list, ","), "the plugin implements none of these algorithms", "allow at least one algorithm the plugin implements (see docs/ssh.md)")
		}
	}
	return p, nil
}
