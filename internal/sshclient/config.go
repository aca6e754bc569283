package sshclient

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/internal/proc"
	"github.com/mu-org/mu-plugins/protocol"
)

// How a destination was resolved.
const (
	viaSSHG = "ssh -G"
	viaLib  = "ssh_config"
)

// Resolved is a destination as OpenSSH resolves it: every option `ssh -G`
// prints, and the ones the plugin acts on read out of them.
type Resolved struct {
	Alias                 string // what was asked (target.host.name)
	HostName              string
	User                  string
	Port                  int
	IdentityFiles         []string // expanded; may not exist
	CertificateFiles      []string
	IdentitiesOnly        bool
	IdentityAgent         string   // "" (SSH_AUTH_SOCK), "none", "$VAR" or a socket path
	ProxyJump             []string // each [user@]host[:port], first hop first
	ProxyCommand          string   // as written (tokens unexpanded); "" for none
	HostKeyAlias          string
	UserKnownHostsFiles   []string
	GlobalKnownHostsFiles []string
	StrictHostKeyChecking string // yes, no, accept-new or ask
	HashKnownHosts        bool
	FingerprintHash       string   // sha256 or md5
	HostKeyAlgorithms     []string // in preference order; nil: OpenSSH's default
	// KnownHostsOrder: known_hosts' key types go first (HostKeyAlgorithms
	// unset or only amended with + or -, as in OpenSSH).
	KnownHostsOrder          bool
	KexAlgorithms            []string
	Ciphers                  []string
	MACs                     []string
	PubkeyAcceptedAlgorithms []string
	AddressFamily            string // any, inet or inet6
	BindAddress              string
	ConnectionAttempts       int
	ConnectTimeout           time.Duration
	ServerAliveInterval      time.Duration
	ServerAliveCountMax      int
	RequiredRSASize          int
	ControlMaster            string // no, yes, ask, auto or autoask
	ControlPath              string // expanded; "" for none
	Via                      string // "ssh -G" or "ssh_config"

	kv   map[string][]string // every option as resolved, lower-case keys
	src  *origins            // where each option was set
	hide map[string]string   // expanded value -> as written, when it used ${VAR}

	flagPrefix string // Config.FlagPrefix, for messages
}

// Addr is "hostname:port".
func (r *Resolved) Addr() string {
	return joinHostPort(r.HostName, r.Port)
}

// Files lists the ssh_config files read for the destination, in order.
func (r *Resolved) Files() []string {
	if r.src == nil {
		return nil
	}
	return r.src.files
}

func (r *Resolved) get(k string) string {
	if v := r.kv[k]; len(v) > 0 {
		return v[0]
	}
	return ""
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
	configFile string   // --config; "" is OpenSSH's default files
	options    []string // --option Key=Value, as ssh -o (the destination only, as ssh -J does)
	sshBin     string   // "" when no ssh client is installed
	flagPrefix string   // Config.FlagPrefix: how the embedding plugin names --option, --identity
}

func newResolver(configFile string, options []string) *resolver {
	r := &resolver{configFile: configFile, options: options}
	if p, err := exec.LookPath("ssh"); err == nil {
		r.sshBin = p
	}
	return r
}

// hopDest turns a ProxyJump hop, [user@]host[:port], into a destination
// `ssh -G` reads: ssh://[user@]host[:port].
func hopDest(hop string) string {
	if strings.HasPrefix(hop, "ssh://") {
		return hop
	}
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

// Resolve resolves one destination ([user@]host, ssh://… or an alias),
// with the --option overrides, and refuses an option the plugin cannot
// honour (a hand-back naming it and its config line).
func (r *resolver) Resolve(ctx context.Context, dest string) (*Resolved, error) {
	return r.resolve(ctx, dest, r.options)
}

// resolveHop resolves a ProxyJump hop as `ssh -J` does: with the config
// file, without the -o overrides.
func (r *resolver) resolveHop(ctx context.Context, hop string) (*Resolved, error) {
	return r.resolve(ctx, hopDest(strings.TrimSpace(hop)), nil)
}

func (r *resolver) resolve(ctx context.Context, dest string, opts []string) (*Resolved, error) {
	if dest == "" || strings.HasPrefix(dest, "-") || strings.ContainsAny(dest, " \t\r\n'\"\\;&|`$") {
		return nil, protocol.Errorf(protocol.Permanent, "invalid SSH destination %q", SafeName(dest))
	}
	var res *Resolved
	var err error
	if r.sshBin != "" {
		res, err = r.resolveG(ctx, dest, opts)
	} else {
		res, err = r.resolveLib(dest, opts)
	}
	if err != nil {
		return nil, protocol.HumanError(fmt.Sprintf("check the SSH configuration for this host (`%s`)", r.sshCommand("-G", dest)),
			"cannot resolve %s: %v", SafeName(dest), err)
	}
	res.Alias, res.flagPrefix = dest, r.flagPrefix
	if res.src != nil {
		res.src.optionFlag = FlagName(r.flagPrefix, "option")
	}
	if err := res.read(); err != nil {
		return nil, err
	}
	return res, res.audit()
}

// sshCommand is the OpenSSH command line that matches this registration,
// for remedies: `ssh [-F FILE] [-o K=V …] ARGS`.
func (r *resolver) sshCommand(args ...string) string { return r.toolCommand("ssh", args...) }

// toolCommand is an OpenSSH tool's command line (ssh, ssh-copy-id) with
// the registration's --config and --option.
func (r *resolver) toolCommand(tool string, args ...string) string {
	parts := []string{tool}
	if r.configFile != "" {
		parts = append(parts, "-F", shellWord(r.configFile))
	}
	for _, o := range r.options {
		parts = append(parts, "-o", shellWord(o))
	}
	for _, a := range args {
		parts = append(parts, shellWord(a))
	}
	return strings.Join(parts, " ")
}

// shellWord quotes s for a shell only when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
		return s
	}
	return shQuote(s)
}

func (r *resolver) resolveG(ctx context.Context, dest string, opts []string) (*Resolved, error) {
	// -vvv: ssh's debug lines say which files and blocks it applied, so a
	// refused option can be traced to its line. Nothing else of them is kept.
	args := []string{"-G", "-vvv"}
	if r.configFile != "" {
		args = append(args, "-F", r.configFile)
	}
	for _, o := range opts {
		args = append(args, "-o", o)
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
		return nil, fmt.Errorf("ssh -G: %v", err)
	case run.Stopped:
		return nil, fmt.Errorf("ssh -G did not finish: %v", ctx.Err())
	case run.ExitCode != 0:
		return nil, fmt.Errorf("ssh -G: exit %d: %s", run.ExitCode, sshGError(stderr.String()))
	}
	kv := map[string][]string{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		k = strings.ToLower(k)
		kv[k] = append(kv[k], v)
	}
	return &Resolved{Via: viaSSHG, kv: kv, src: parseDebug(stderr.String(), opts)}, nil
}

// sshGError is the line of ssh -G's stderr that says what went wrong (not
// its debug lines, which may quote the environment).
func sshGError(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "debug") && !strings.HasPrefix(l, "OpenSSH_") &&
			!strings.HasPrefix(l, "Pseudo-terminal") {
			return FirstLine(l)
		}
	}
	return "no reason given"
}

// read fills the fields from the resolved options. `ssh -G` leaves the
// tokens of IdentityFile, CertificateFile and ProxyCommand to connect time;
// the library leaves all of them, and the defaults, to us.
func (r *Resolved) read() error {
	if r.Via == viaLib {
		if err := r.libDefaults(); err != nil {
			return err
		}
	}
	r.HostName, r.User = r.get("hostname"), r.get("user")
	r.Port, _ = strconv.Atoi(r.get("port"))
	if r.Port == 0 {
		r.Port = 22
	}
	if r.User == "" {
		if u, err := user.Current(); err == nil {
			r.User = u.Username
		}
	}
	r.HostKeyAlias = strings.ToLower(r.get("hostkeyalias"))
	var err error
	expand := func(opt string, vals []string) (out []string) {
		for _, v := range vals {
			if strings.EqualFold(v, "none") || err != nil {
				continue
			}
			var e string
			if e, err = expandPath(v, r.tokens()); err != nil {
				err = r.invalid(optionPolicies[opt].name, v, err)
				return nil
			}
			r.hideExpansion(v, e)
			out = append(out, e)
		}
		return out
	}
	r.IdentityFiles = expand("identityfile", r.kv["identityfile"])
	r.CertificateFiles = expand("certificatefile", r.kv["certificatefile"])
	if err != nil {
		return err
	}
	r.IdentitiesOnly = r.get("identitiesonly") == "yes"
	r.IdentityAgent = r.get("identityagent")
	if pj := r.get("proxyjump"); pj != "" && pj != "none" {
		r.ProxyJump = strings.Split(pj, ",")
	}
	if pc := r.get("proxycommand"); pc != "" && pc != "none" {
		r.ProxyCommand = pc
	}
	r.UserKnownHostsFiles = noneless(strings.Fields(r.get("userknownhostsfile")))
	r.GlobalKnownHostsFiles = noneless(strings.Fields(r.get("globalknownhostsfile")))
	r.StrictHostKeyChecking = normStrict(r.get("stricthostkeychecking"))
	r.HashKnownHosts = r.get("hashknownhosts") == "yes"
	r.FingerprintHash = strings.ToLower(r.get("fingerprinthash"))
	r.readAlgorithms()
	r.AddressFamily = r.get("addressfamily")
	r.BindAddress = r.get("bindaddress")
	r.ConnectionAttempts, _ = strconv.Atoi(r.get("connectionattempts"))
	r.ConnectTimeout = seconds(r.get("connecttimeout"))
	r.ServerAliveInterval = seconds(r.get("serveraliveinterval"))
	r.ServerAliveCountMax, _ = strconv.Atoi(r.get("serveralivecountmax"))
	r.RequiredRSASize, _ = strconv.Atoi(r.get("requiredrsasize"))
	r.ControlMaster = normControlMaster(r.get("controlmaster"))
	if cp := r.get("controlpath"); cp != "" && cp != "none" {
		r.ControlPath = cp
	}
	if r.src != nil { // values ssh -G (or libDefaults) expanded
		for _, k := range []string{"IdentityAgent", "ControlPath", "UserKnownHostsFile"} {
			if _, w, ok := r.src.find(k); ok {
				for _, e := range strings.Fields(r.get(strings.ToLower(k))) {
					r.hideExpansion(w, e)
				}
				r.hideExpansion(w, r.get(strings.ToLower(k)))
			}
		}
	}
	r.withDefaults()
	return nil
}

func (r *Resolved) readAlgorithms() {
	list := func(k string) []string {
		if v := r.get(k); v != "" {
			return strings.Split(v, ",")
		}
		return nil
	}
	r.HostKeyAlgorithms = list("hostkeyalgorithms")
	r.KexAlgorithms = list("kexalgorithms")
	r.Ciphers = list("ciphers")
	r.MACs = list("macs")
	r.PubkeyAcceptedAlgorithms = list("pubkeyacceptedalgorithms")
	// OpenSSH orders by known_hosts unless HostKeyAlgorithms was set
	// outright (not just amended with + or -).
	r.KnownHostsOrder = true
	if r.src != nil {
		if _, v, ok := r.src.find("HostKeyAlgorithms"); ok && !strings.HasPrefix(v, "+") && !strings.HasPrefix(v, "-") {
			r.KnownHostsOrder = false
		}
	}
}

// withDefaults fills what OpenSSH defaults and `ssh -G` always prints.
func (r *Resolved) withDefaults() {
	if len(r.UserKnownHostsFiles) == 0 && r.get("userknownhostsfile") == "" {
		r.UserKnownHostsFiles = []string{ExpandTilde("~/.ssh/known_hosts"), ExpandTilde("~/.ssh/known_hosts2")}
	}
	if len(r.GlobalKnownHostsFiles) == 0 && r.get("globalknownhostsfile") == "" {
		r.GlobalKnownHostsFiles = []string{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}
	}
	if r.StrictHostKeyChecking == "" {
		r.StrictHostKeyChecking = "ask"
	}
	if r.ServerAliveCountMax <= 0 {
		r.ServerAliveCountMax = 3
	}
	if r.ConnectionAttempts <= 0 {
		r.ConnectionAttempts = 1
	}
	if r.FingerprintHash == "" {
		r.FingerprintHash = "sha256"
	}
	if r.RequiredRSASize <= 0 {
		r.RequiredRSASize = 1024
	}
	if r.AddressFamily == "" {
		r.AddressFamily = "any"
	}
}

func noneless(fs []string) []string {
	var out []string
	for _, f := range fs {
		if !strings.EqualFold(f, "none") {
			out = append(out, f)
		}
	}
	return out
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

func normControlMaster(v string) string {
	switch strings.ToLower(v) {
	case "yes", "true":
		return "yes"
	case "", "no", "false":
		return "no"
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

func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

func atoiOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

func localUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}
