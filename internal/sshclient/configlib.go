package sshclient

import (
	"os"
	"path/filepath"
	"strings"

	sshconfig "github.com/kevinburke/ssh_config"
)

// The resolver for machines without the OpenSSH client: kevinburke's
// ssh_config reads the files. Its limits, documented in docs/ssh.md: a
// Match other than `all` and `host X` is skipped whole, and only the
// options read below are known.

// libDefaultHostKeyAlgorithms is OpenSSH 9.2's default HostKeyAlgorithms,
// so a first contact shows the key `ssh` would.
const libDefaultHostKeyAlgorithms = "ssh-ed25519-cert-v01@openssh.com,ecdsa-sha2-nistp256-cert-v01@openssh.com," +
	"ecdsa-sha2-nistp384-cert-v01@openssh.com,ecdsa-sha2-nistp521-cert-v01@openssh.com,rsa-sha2-512-cert-v01@openssh.com," +
	"rsa-sha2-256-cert-v01@openssh.com,ssh-ed25519,ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,ecdsa-sha2-nistp521,rsa-sha2-512,rsa-sha2-256"

func (r *resolver) resolveLib(dest string, opts []string) (*Resolved, error) {
	host, userPart, port := splitDest(dest)
	files := []string{r.configFile}
	if r.configFile == "" {
		files = []string{ExpandTilde("~/.ssh/config"), "/etc/ssh/ssh_config"}
	}
	// The --option overrides first: OpenSSH keeps the first value it reads.
	var cfgs []*sshconfig.Config
	if len(opts) > 0 {
		lines := []string{"Host *"}
		for _, o := range opts {
			k, v := splitKeyword(o)
			lines = append(lines, "  "+k+" "+v)
		}
		if c, err := sshconfig.DecodeBytes([]byte(strings.Join(lines, "\n") + "\n")); err == nil {
			cfgs = append(cfgs, c)
		}
	}
	src := &origins{options: opts}
	for _, f := range files {
		c, regions := loadLenient(f, host)
		if c != nil {
			cfgs = append(cfgs, c)
			src.regions = append(src.regions, regions...)
			for _, rg := range regions {
				src.files = appendNew(src.files, rg.file)
			}
		}
	}
	kv := map[string][]string{}
	for k, p := range optionPolicies {
		for _, c := range cfgs {
			if v, err := c.GetAll(host, p.name); err == nil && len(v) > 0 && v[0] != "" {
				kv[k] = v
				break
			}
		}
	}
	if kv["hostname"] == nil {
		kv["hostname"] = []string{host}
	}
	if userPart != "" {
		kv["user"] = []string{userPart}
	}
	if port != 0 {
		kv["port"] = []string{itoa(port)}
	}
	return &Resolved{Via: viaLib, kv: kv, src: src}, nil
}

// libDefaults expands what `ssh -G` would have expanded, and fills the
// defaults it would have printed.
func (r *Resolved) libDefaults() error {
	set := func(k, v string) {
		if r.get(k) == "" {
			r.kv[k] = []string{v}
		}
	}
	if r.get("identityfile") == "" {
		r.kv["identityfile"] = []string{"~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ecdsa_sk", "~/.ssh/id_ed25519", "~/.ssh/id_ed25519_sk"}
	}
	set("hostkeyalgorithms", libDefaultHostKeyAlgorithms)
	tv := tokenValues{host: r.get("hostname"), hostArg: r.Alias, user: r.get("user"), keyAlias: r.get("hostkeyalias")}
	h, err := expandTokens(r.get("hostname"), hostNameTokens, tokenValues{host: hostOf(r.Alias)}, false)
	if err != nil {
		return r.invalid("HostName", r.get("hostname"), err)
	}
	r.kv["hostname"] = []string{h}
	tv.host = h
	if tv.user == "" {
		tv.user = localUser()
	}
	tv.port = atoiOr(r.get("port"), 22)
	if tv.keyAlias == "" {
		tv.keyAlias = r.Alias
	}
	for _, k := range []string{"identityagent", "controlpath", "userknownhostsfile"} {
		v := r.get(k)
		if v == "" || strings.EqualFold(v, "none") || v == "SSH_AUTH_SOCK" || strings.HasPrefix(v, "$") && !strings.HasPrefix(v, "${") {
			continue
		}
		var out []string
		for _, f := range strings.Fields(v) {
			e, err := expandPath(f, tv)
			if err != nil {
				return r.invalid(optionPolicies[k].name, v, err)
			}
			out = append(out, e)
		}
		r.kv[k] = []string{strings.Join(out, " ")}
	}
	return nil
}

func hostOf(dest string) string {
	h, _, _ := splitDest(dest)
	return h
}

// loadLenient parses an ssh_config with kevinburke/ssh_config, ignoring what
// it cannot parse: a Match block other than "all" or "host" (the library
// supports only those, and one such line otherwise blanks every value) is
// blanked whole, so its settings never leak into the block before it, and
// line numbers stay true. A file that still fails to parse counts as
// empty. It also returns the regions that apply to host, for origins.
func loadLenient(path, host string) (*sshconfig.Config, []region) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil
	}
	lines := strings.Split(string(b), "\n")
	regions := []region{{file: path, from: 1}}
	skipping, applies := false, true
	for i, line := range lines {
		f := strings.Fields(line)
		if len(f) > 0 {
			switch kw := strings.ToLower(strings.TrimSuffix(f[0], "=")); kw {
			case "include":
				if applies && !skipping {
					regions = append(regions, includedRegions(path, f[1:])...)
				}
			case "host":
				skipping = false
				applies = hostMatches(f[1:], host)
				if applies {
					regions = append(regions, region{file: path, from: i + 2})
				}
			case "match":
				crit := ""
				if len(f) > 1 {
					crit = strings.ToLower(f[1])
				}
				skipping = !(crit == "all" && len(f) == 2 || crit == "host" && len(f) == 3)
				applies = !skipping && (crit == "all" || hostMatches(strings.Split(f[2], ","), host))
				if applies {
					regions = append(regions, region{file: path, from: i + 2})
				}
			}
		}
		if skipping {
			lines[i] = ""
		}
	}
	c, err := sshconfig.DecodeBytes([]byte(strings.Join(lines, "\n")))
	if err != nil {
		return nil, nil
	}
	return c, regions
}

// includedRegions are the top regions of the files an Include names
// (relative paths are under ~/.ssh, or /etc/ssh for a system file, as in
// OpenSSH), for origins: the library reads their values itself.
func includedRegions(from string, patterns []string) []region {
	var out []region
	for _, p := range patterns {
		p = ExpandTilde(p)
		if !filepath.IsAbs(p) {
			base := ExpandTilde("~/.ssh")
			if strings.HasPrefix(from, "/etc/ssh/") {
				base = "/etc/ssh"
			}
			p = filepath.Join(base, p)
		}
		matches, _ := filepath.Glob(p)
		for _, m := range matches {
			out = append(out, region{file: m, from: 1})
		}
	}
	return out
}

// hostMatches applies ssh_config Host patterns (with ! negation) to host.
func hostMatches(patterns []string, host string) bool {
	var pats []*sshconfig.Pattern
	for _, p := range patterns {
		if pat, err := sshconfig.NewPattern(p); err == nil {
			pats = append(pats, pat)
		}
	}
	return (&sshconfig.Host{Patterns: pats}).Matches(host)
}
