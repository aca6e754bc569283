package sshclient

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mu-org/mu-plugins/protocol"
)

// The audit of every ssh_config option OpenSSH's `ssh -G` prints (9.2),
// by what it means for where and how the plugin connects. The rule: never
// connect differently from `ssh` without saying so. An option that changes
// where or how to connect and that the plugin does not implement is a
// hand-back naming the option and its config line, never a silent
// fallback. docs/ssh.md lists the same table (TestOptionAuditDocumented).

// Classes of an option.
const (
	optDone     = "implemented"
	optHarmless = "harmless"  // no bearing on where or how the plugin connects
	optNotDone  = "not done"  // a session feature the plugin does not offer; said in the log and in failures
	optRefused  = "refused"   // a value that would make the plugin connect differently: a hand-back
	optBySSHG   = "by ssh -G" // done by `ssh -G` itself; refused when the OpenSSH client is not installed
)

// optPolicy is one option's entry.
type optPolicy struct {
	name  string // as ssh_config(5) writes it
	class string
	// refuse reports whether a value is one the plugin cannot honour, and
	// why (what ssh would do). Nil: nothing is refused.
	refuse func(v string) (bool, string)
	remedy string // what to do instead, for a refusal
}

func refuseIf(vals ...string) func(string) bool {
	return func(v string) bool {
		for _, x := range vals {
			if strings.EqualFold(v, x) {
				return true
			}
		}
		return false
	}
}

func unlessNone(v string) bool { return v != "" && !strings.EqualFold(v, "none") }

func why(test func(string) bool, reason string) func(string) (bool, string) {
	return func(v string) (bool, string) { return test(v), reason }
}

// optionPolicies is keyed by the lower-case keyword.
var optionPolicies = byKeyword([]optPolicy{
	// Where to connect, and through what.
	{name: "Host", class: optHarmless},
	{name: "HostName", class: optDone},
	{name: "Port", class: optDone},
	{name: "User", class: optDone},
	{name: "ProxyJump", class: optDone},
	{name: "ProxyCommand", class: optDone, refuse: why(refuseIf("-"), "`ProxyCommand -` makes ssh speak over its own stdin and stdout, which are mu's protocol channel here"),
		remedy: "give the ProxyCommand a command that relays to the host (`ssh -W %h:%p JUMP`, `nc %h %p`)"},
	{name: "ProxyUseFdpass", class: optRefused, refuse: why(refuseIf("yes"), "with ProxyUseFdpass the ProxyCommand hands ssh a connected socket; the plugin only speaks over the command's stdin and stdout"),
		remedy: "set ProxyUseFdpass no for this host if the ProxyCommand also relays over its stdin and stdout (`ssh -W` and `nc` do)"},
	{name: "ControlMaster", class: optDone},
	{name: "ControlPath", class: optDone},
	{name: "ControlPersist", class: optHarmless},
	{name: "AddressFamily", class: optDone},
	{name: "BindAddress", class: optDone},
	{name: "BindInterface", class: optRefused, refuse: why(unlessNone, "ssh would bind its connection to this network interface"),
		remedy: "use BindAddress with the interface's address instead"},
	{name: "ConnectionAttempts", class: optDone},
	{name: "ConnectTimeout", class: optDone},
	{name: "CanonicalizeHostname", class: optBySSHG},
	{name: "CanonicalDomains", class: optBySSHG},
	{name: "CanonicalizeFallbackLocal", class: optBySSHG},
	{name: "CanonicalizeMaxDots", class: optBySSHG},
	{name: "CanonicalizePermittedCNAMEs", class: optBySSHG},
	{name: "Tag", class: optHarmless},
	// Trusting the host.
	{name: "HostKeyAlias", class: optDone},
	{name: "StrictHostKeyChecking", class: optDone},
	{name: "UserKnownHostsFile", class: optDone},
	{name: "GlobalKnownHostsFile", class: optDone},
	{name: "HashKnownHosts", class: optDone},
	{name: "HostKeyAlgorithms", class: optDone},
	{name: "FingerprintHash", class: optDone},
	{name: "RequiredRSASize", class: optDone},
	{name: "CheckHostIP", class: optRefused, refuse: why(refuseIf("yes"), "ssh would also check the server's IP address against known_hosts"),
		remedy: "set CheckHostIP no for this host (OpenSSH's default since 8.5)"},
	{name: "NoHostAuthenticationForLocalhost", class: optRefused, refuse: why(refuseIf("yes"), "ssh would skip host key checks for localhost; the plugin always verifies host keys"),
		remedy: "set NoHostAuthenticationForLocalhost no and add the host's key to known_hosts"},
	{name: "KnownHostsCommand", class: optRefused, refuse: why(unlessNone, "ssh would also read host keys from this command's output"),
		remedy: "write the keys it prints into a known_hosts file (UserKnownHostsFile)"},
	{name: "RevokedHostKeys", class: optRefused, refuse: why(unlessNone, "ssh would refuse the host keys this file revokes"),
		remedy: "mark the revoked keys with @revoked lines in known_hosts instead"},
	{name: "VerifyHostKeyDNS", class: optNotDone},
	{name: "UpdateHostKeys", class: optNotDone},
	{name: "CASignatureAlgorithms", class: optNotDone},
	// The connection's algorithms.
	{name: "KexAlgorithms", class: optDone},
	{name: "Ciphers", class: optDone},
	{name: "MACs", class: optDone},
	{name: "Compression", class: optHarmless},
	{name: "RekeyLimit", class: optHarmless},
	{name: "IPQoS", class: optHarmless},
	{name: "TCPKeepAlive", class: optHarmless},
	{name: "ServerAliveInterval", class: optDone},
	{name: "ServerAliveCountMax", class: optDone},
	// Authenticating.
	{name: "IdentityFile", class: optDone},
	{name: "CertificateFile", class: optDone},
	{name: "IdentitiesOnly", class: optDone},
	{name: "IdentityAgent", class: optDone},
	{name: "PubkeyAcceptedAlgorithms", class: optDone},
	{name: "PubkeyAuthentication", class: optRefused, refuse: why(refuseIf("no", "false"), "ssh would not offer keys; the plugin authenticates by public key only"),
		remedy: "set PubkeyAuthentication yes for this host and install a key"},
	{name: "PKCS11Provider", class: optRefused, refuse: why(unlessNone, "ssh would offer the keys of this PKCS#11 token, which the plugin does not read"),
		remedy: "load the token's keys into ssh-agent (`ssh-add -s PROVIDER`) and set PKCS11Provider none for this host"},
	{name: "SecurityKeyProvider", class: optHarmless},
	{name: "AddKeysToAgent", class: optHarmless},
	{name: "BatchMode", class: optHarmless},
	{name: "PasswordAuthentication", class: optNotDone},
	{name: "KbdInteractiveAuthentication", class: optNotDone},
	{name: "KbdInteractiveDevices", class: optNotDone},
	{name: "NumberOfPasswordPrompts", class: optHarmless},
	{name: "HostbasedAuthentication", class: optNotDone},
	{name: "HostbasedAcceptedAlgorithms", class: optNotDone},
	{name: "EnableSSHKeysign", class: optNotDone},
	{name: "GSSAPIAuthentication", class: optNotDone},
	{name: "GSSAPIKeyExchange", class: optNotDone},
	{name: "GSSAPIDelegateCredentials", class: optNotDone},
	{name: "GSSAPIKexAlgorithms", class: optNotDone},
	{name: "GSSAPIRenewalForcesRekey", class: optNotDone},
	{name: "GSSAPITrustDNS", class: optNotDone},
	{name: "GSSAPIClientIdentity", class: optNotDone},
	{name: "GSSAPIServerIdentity", class: optNotDone},
	// The session, which the plugin always opens as `ssh -T host CMD`.
	{name: "ForwardAgent", class: optNotDone},
	{name: "SendEnv", class: optNotDone},
	{name: "SetEnv", class: optNotDone},
	{name: "PermitLocalCommand", class: optNotDone},
	{name: "LocalCommand", class: optNotDone},
	{name: "RemoteCommand", class: optHarmless},
	{name: "RequestTTY", class: optHarmless},
	{name: "SessionType", class: optHarmless},
	{name: "StdinNull", class: optHarmless},
	{name: "ForkAfterAuthentication", class: optHarmless},
	{name: "Tunnel", class: optNotDone},
	{name: "TunnelDevice", class: optHarmless},
	{name: "LocalForward", class: optNotDone},
	{name: "RemoteForward", class: optNotDone},
	{name: "DynamicForward", class: optNotDone},
	{name: "ClearAllForwardings", class: optHarmless},
	{name: "ExitOnForwardFailure", class: optHarmless},
	{name: "GatewayPorts", class: optHarmless},
	{name: "PermitRemoteOpen", class: optHarmless},
	{name: "StreamLocalBindMask", class: optHarmless},
	{name: "StreamLocalBindUnlink", class: optHarmless},
	{name: "ForwardX11", class: optNotDone},
	{name: "ForwardX11Timeout", class: optHarmless},
	{name: "ForwardX11Trusted", class: optHarmless},
	{name: "XAuthLocation", class: optHarmless},
	{name: "EscapeChar", class: optHarmless},
	{name: "EnableEscapeCommandline", class: optHarmless},
	{name: "ObscureKeystrokeTiming", class: optHarmless},
	{name: "ChannelTimeout", class: optHarmless},
	{name: "VisualHostKey", class: optHarmless},
	{name: "LogLevel", class: optHarmless},
	{name: "LogVerbose", class: optHarmless},
	{name: "SyslogFacility", class: optHarmless},
})

func byKeyword(ps []optPolicy) map[string]optPolicy {
	m := make(map[string]optPolicy, len(ps))
	for _, p := range ps {
		m[strings.ToLower(p.name)] = p
	}
	return m
}

// audit refuses, as a hand-back naming the option and where it was set,
// the first resolved value the plugin cannot honour.
func (r *Resolved) audit() error {
	keys := make([]string, 0, len(r.kv))
	for k := range r.kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p, ok := optionPolicies[k]
		if !ok || p.refuse == nil {
			continue
		}
		for _, v := range r.kv[k] {
			if bad, reason := p.refuse(v); bad {
				return r.refusal(p.name, v, reason, p.remedy)
			}
		}
	}
	if r.Via == viaLib {
		if v := r.get("canonicalizehostname"); v != "" && v != "no" && v != "false" {
			return r.refusal("CanonicalizeHostname", v, "ssh would canonicalize the host name, which the plugin leaves to `ssh -G` and the OpenSSH client is not installed here",
				"install the OpenSSH client (openssh-client), or set CanonicalizeHostname no and write the full HostName")
		}
	}
	return nil
}

// refusal is the hand-back for an option value the plugin will not honour.
func (r *Resolved) refusal(name, value, reason, remedy string) error {
	where := r.Where(name)
	fix := remedy
	if fix != "" {
		fix += "; "
	}
	fix += fmt.Sprintf("to override it for this registration only, add `%s %s=…` to the plugin's argv", FlagName(r.flagPrefix, "option"), name)
	layer := "mu-plugin-ssh"
	if r.flagPrefix != "" {
		layer = "the plugin's SSH layer (mu-plugin-ssh's)"
	}
	return protocol.HumanError(fix,
		"%s: ssh_config option %s %s (%s) is not supported by %s: %s, so the plugin would connect differently from ssh",
		SafeName(r.Alias), name, value, where, layer, reason)
}

// invalid is the hand-back for a value ssh itself would reject.
func (r *Resolved) invalid(name, value string, err error) error {
	return protocol.HumanError(fmt.Sprintf("fix %s in the SSH configuration (%s)", name, r.Where(name)),
		"%s: ssh_config option %s %s is invalid: %v", SafeName(r.Alias), name, value, err)
}

// show is a path or value derived from the config, for a log line or a
// message: as written when it came from the environment (${VAR}), so an
// environment value never reaches a log or a reply.
func (r *Resolved) show(v string) string {
	if w, ok := r.hide[v]; ok {
		return w + " (as written)"
	}
	return v
}

// hideExpansion remembers that expanded came from written through the
// environment.
func (r *Resolved) hideExpansion(written, expanded string) {
	if !strings.Contains(written, "$") || written == expanded {
		return
	}
	if r.hide == nil {
		r.hide = map[string]string{}
	}
	r.hide[expanded] = written
}

// Where names the line that set an option, or says it is OpenSSH's default.
func (r *Resolved) Where(name string) string {
	if r.src != nil {
		if w, _, ok := r.src.find(name); ok {
			return w
		}
	}
	return "OpenSSH's default or a system-wide setting"
}

// notDone lists the options set to something the plugin does not do in its
// sessions (agent forwarding, SetEnv, LocalCommand, forwards …), for the
// log: ssh would do them, the plugin says it does not.
func (r *Resolved) notDone() []string {
	var out []string
	on := func(k string) bool {
		v := strings.ToLower(r.get(k))
		return v != "" && v != "no" && v != "false" && v != "none"
	}
	// Names only: a SetEnv value may be a secret.
	for _, k := range []string{"forwardagent", "sendenv", "setenv", "localforward", "remoteforward", "dynamicforward", "forwardx11", "tunnel", "gssapiauthentication", "hostbasedauthentication"} {
		if on(k) {
			out = append(out, optionPolicies[k].name)
		}
	}
	if on("permitlocalcommand") && r.get("localcommand") != "" {
		out = append(out, "LocalCommand")
	}
	return out
}
