// Package sshlink is mu-plugin-ssh's backend: a link to any SSH host, with
// scripts that stop on timeout ("stopping"), git fetch and push over the
// plugin's own connection, and OpenSSH's own resolution and trust rules.
package sshlink

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	sshconfig "github.com/kevinburke/ssh_config"

	"github.com/mu-org/mu-plugins/internal/proc"
)

// Resolved is a destination as OpenSSH resolves it.
type Resolved struct {
	Alias                 string // what was asked (target.host.name)
	HostName              string
	User                  string
	Port                  int
	IdentityFiles         []string // expanded; may not exist
	CertificateFiles      []string
	IdentitiesOnly        bool
	ProxyJump             []string // each [user@]host[:port], first hop first
	UserKnownHostsFiles   []string
	GlobalKnownHostsFiles []string
	StrictHostKeyChecking string // yes, no, accept-new or ask
	ConnectTimeout        time.Duration
	ServerAliveInterval   time.Duration
	ServerAliveCountMax   int
	Via                   string // "ssh -G" or "ssh_config"
}

// Addr is "hostname:port".
func (r *Resolved) Addr() string {
	return joinHostPort(r.HostName, r.Port)
}

func joinHostPort(h string, p int) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]:" + strconv.Itoa(p)
	}
	return h + ":" + strconv.Itoa(p)
}

// resolver resolves destinations with `ssh -G` where the OpenSSH client is
// installed, else with kevinburke/ssh_config (parse errors ignored).
type resolver struct {
	configFile string // --config; "" is OpenSSH's default files
	sshBin     string // "" when no ssh client is installed
}

func newResolver(configFile string) *resolver {
	r := &resolver{configFile: configFile}
	if p, err := exec.LookPath("ssh"); err == nil {
		r.sshBin = p
	}
	return r
}

// hopDest turns a ProxyJump hop, [user@]host[:port], into a destination
// `ssh -G` reads: ssh://[user@]host[:port].
func hopDest(hop string) string {
	h, u, _ := strings.Cut(hop, "@")
	if u == "" {
		u, h = h, ""
	} else {
		h += "@"
	}
	if strings.Count(u, ":") > 1 && !strings.HasPrefix(u, "[") {
		u = "[" + u + "]" // a bare IPv6 address
	}
	return "ssh://" + h + u
}

// Resolve resolves one destination ([user@]host, ssh://… or an alias).
func (r *resolver) Resolve(ctx context.Context, dest string) (*Resolved, error) {
	if dest == "" || strings.HasPrefix(dest, "-") || strings.ContainsAny(dest, " \t\r\n'\"\\;&|`$") {
		return nil, fmt.Errorf("invalid SSH destination %q", dest)
	}
	var res *Resolved
	var err error
	if r.sshBin != "" {
		res, err = r.resolveG(ctx, dest)
	} else {
		res, err = r.resolveLib(dest)
	}
	if err != nil {
		return nil, err
	}
	res.Alias = dest
	return res, nil
}

func (r *resolver) resolveG(ctx context.Context, dest string) (*Resolved, error) {
	args := []string{"-G"}
	if r.configFile != "" {
		args = append(args, "-F", r.configFile)
	}
	args = append(args, "--", dest)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.Command(r.sshBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	run, err := proc.Run(ctx, cmd, proc.Options{})
	switch {
	case err != nil:
		return nil, fmt.Errorf("ssh -G %s: %v", dest, err)
	case run.Stopped:
		return nil, fmt.Errorf("ssh -G %s did not finish: %v", dest, ctx.Err())
	case run.ExitCode != 0:
		return nil, fmt.Errorf("ssh -G %s: exit %d: %s", dest, run.ExitCode, firstLine(stderr.String()))
	}
	out := stdout.Bytes()
	kv := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		kv[k] = append(kv[k], v)
	}
	get := func(k string) string {
		if v := kv[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	res := &Resolved{Via: "ssh -G", HostName: get("hostname"), User: get("user")}
	res.Port, _ = strconv.Atoi(get("port"))
	for _, f := range kv["identityfile"] {
		res.IdentityFiles = append(res.IdentityFiles, expandTilde(f))
	}
	for _, f := range kv["certificatefile"] {
		res.CertificateFiles = append(res.CertificateFiles, expandTilde(f))
	}
	res.IdentitiesOnly = get("identitiesonly") == "yes"
	if pj := get("proxyjump"); pj != "" && pj != "none" {
		res.ProxyJump = strings.Split(pj, ",")
	}
	for _, f := range strings.Fields(get("userknownhostsfile")) {
		res.UserKnownHostsFiles = append(res.UserKnownHostsFiles, expandTilde(f))
	}
	for _, f := range strings.Fields(get("globalknownhostsfile")) {
		res.GlobalKnownHostsFiles = append(res.GlobalKnownHostsFiles, expandTilde(f))
	}
	res.StrictHostKeyChecking = normStrict(get("stricthostkeychecking"))
	res.ConnectTimeout = seconds(get("connecttimeout"))
	res.ServerAliveInterval = seconds(get("serveraliveinterval"))
	res.ServerAliveCountMax, _ = strconv.Atoi(get("serveralivecountmax"))
	return res.withDefaults(), nil
}

func (r *resolver) resolveLib(dest string) (*Resolved, error) {
	host, userPart, port := splitDest(dest)
	files := []string{r.configFile}
	if r.configFile == "" {
		files = []string{expandTilde("~/.ssh/config"), "/etc/ssh/ssh_config"}
	}
	var cfgs []*sshconfig.Config
	for _, f := range files {
		if c := loadLenient(f); c != nil {
			cfgs = append(cfgs, c)
		}
	}
	getAll := func(k string) []string {
		for _, c := range cfgs {
			if v, err := c.GetAll(host, k); err == nil && len(v) > 0 {
				return v
			}
		}
		return nil
	}
	get := func(k string) string {
		if v := getAll(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	res := &Resolved{Via: "ssh_config", HostName: get("HostName"), User: get("User")}
	if res.HostName == "" {
		res.HostName = host
	}
	res.HostName = strings.ReplaceAll(res.HostName, "%h", host)
	if userPart != "" {
		res.User = userPart
	}
	res.Port, _ = strconv.Atoi(get("Port"))
	if port != 0 {
		res.Port = port
	}
	for _, f := range getAll("IdentityFile") {
		res.IdentityFiles = append(res.IdentityFiles, expandTilde(f))
	}
	for _, f := range getAll("CertificateFile") {
		res.CertificateFiles = append(res.CertificateFiles, expandTilde(f))
	}
	res.IdentitiesOnly = strings.EqualFold(get("IdentitiesOnly"), "yes")
	if pj := get("ProxyJump"); pj != "" && !strings.EqualFold(pj, "none") {
		res.ProxyJump = strings.Split(pj, ",")
	}
	for _, f := range strings.Fields(get("UserKnownHostsFile")) {
		res.UserKnownHostsFiles = append(res.UserKnownHostsFiles, expandTilde(f))
	}
	for _, f := range strings.Fields(get("GlobalKnownHostsFile")) {
		res.GlobalKnownHostsFiles = append(res.GlobalKnownHostsFiles, expandTilde(f))
	}
	res.StrictHostKeyChecking = normStrict(get("StrictHostKeyChecking"))
	res.ConnectTimeout = seconds(get("ConnectTimeout"))
	res.ServerAliveInterval = seconds(get("ServerAliveInterval"))
	res.ServerAliveCountMax, _ = strconv.Atoi(get("ServerAliveCountMax"))
	return res.withDefaults(), nil
}

// loadLenient parses an ssh_config with kevinburke/ssh_config, ignoring what
// it cannot parse: a Match block other than "all" or "host" (the library
// supports only those, and one such line otherwise blanks every value) is
// dropped whole, so its settings never leak into the block before it. A
// file that still fails to parse counts as empty.
func loadLenient(path string) *sshconfig.Config {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var keep []string
	skipping := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			kw := strings.ToLower(strings.TrimSuffix(f[0], "="))
			switch kw {
			case "host":
				skipping = false
			case "match":
				crit := ""
				if len(f) > 1 {
					crit = strings.ToLower(f[1])
				}
				skipping = !(crit == "all" && len(f) == 2 || crit == "host" && len(f) == 3)
			}
		}
		if !skipping {
			keep = append(keep, line)
		}
	}
	c, err := sshconfig.DecodeBytes([]byte(strings.Join(keep, "\n")))
	if err != nil {
		return nil
	}
	return c
}

// withDefaults fills what OpenSSH defaults.
func (r *Resolved) withDefaults() *Resolved {
	if r.Port == 0 {
		r.Port = 22
	}
	if r.User == "" {
		if u, err := user.Current(); err == nil {
			r.User = u.Username
		}
	}
	if len(r.IdentityFiles) == 0 {
		for _, n := range []string{"id_rsa", "id_ecdsa", "id_ecdsa_sk", "id_ed25519", "id_ed25519_sk"} {
			r.IdentityFiles = append(r.IdentityFiles, expandTilde("~/.ssh/"+n))
		}
	}
	if len(r.UserKnownHostsFiles) == 0 {
		r.UserKnownHostsFiles = []string{expandTilde("~/.ssh/known_hosts"), expandTilde("~/.ssh/known_hosts2")}
	}
	if len(r.GlobalKnownHostsFiles) == 0 {
		r.GlobalKnownHostsFiles = []string{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}
	}
	if r.StrictHostKeyChecking == "" {
		r.StrictHostKeyChecking = "ask"
	}
	if r.ServerAliveCountMax <= 0 {
		r.ServerAliveCountMax = 3
	}
	return r
}

// splitDest splits an OpenSSH destination: [user@]host, or
// ssh://[user@]host[:port] (a bracketed IPv6 host allowed).
func splitDest(d string) (host, user string, port int) {
	uri := strings.HasPrefix(d, "ssh://")
	d = strings.TrimSuffix(strings.TrimPrefix(d, "ssh://"), "/")
	if i := strings.LastIndexByte(d, '@'); i >= 0 {
		user, d = d[:i], d[i+1:]
	}
	if !uri {
		return d, user, 0
	}
	if strings.HasPrefix(d, "[") {
		if j := strings.Index(d, "]"); j > 0 {
			host = d[1:j]
			if rest := d[j+1:]; strings.HasPrefix(rest, ":") {
				port, _ = strconv.Atoi(rest[1:])
			}
			return host, user, port
		}
	}
	if i := strings.LastIndexByte(d, ':'); i >= 0 && strings.Count(d, ":") == 1 {
		if p, err := strconv.Atoi(d[i+1:]); err == nil {
			return d[:i], user, p
		}
	}
	return d, user, 0
}

func normStrict(v string) string {
	switch strings.ToLower(v) {
	case "yes", "true":
		return "yes"
	case "no", "false", "off":
		return "no"
	case "accept-new":
		return "accept-new"
	}
	return strings.ToLower(v)
}

func seconds(v string) time.Duration {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

func expandTilde(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}
