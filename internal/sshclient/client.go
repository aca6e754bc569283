// Package sshclient is an OpenSSH-compatible SSH client on
// golang.org/x/crypto/ssh: a destination resolved as OpenSSH resolves it
// (`ssh -G`, else the ssh_config files read here), host keys checked
// against known_hosts, keys from the files and the agent OpenSSH would
// offer, ProxyCommand and ProxyJump followed, a running ControlMaster
// reused, keepalives. mu-plugin-ssh's link and mu-plugin-docker's ssh://
// Engines connect through it. Its errors are *protocol.Error: human for the
// configuration, host keys and authentication (with a remedy), retryable
// when the host cannot be reached.
package sshclient

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"
)

// Defaults where the user's configuration sets nothing.
const (
	defaultConnectTimeout = 30 * time.Second
	defaultAliveInterval  = 15 * time.Second
)

// Config is what the client reads from the embedding plugin's flags.
type Config struct {
	SSHConfig  string   // the ssh_config file ("" is OpenSSH's own), as `ssh -F`
	Options    []string // ssh -o Key=Value, for the destination
	KnownHosts string   // replaces the configured known_hosts files
	Identity   string   // a private key offered before the configured ones, as `ssh -i`
	// FlagPrefix names the four flags above in messages and remedies, for
	// a plugin that embeds this client under its own flag names: "" is
	// mu-plugin-ssh's --config, --option, --known-hosts and --identity;
	// "ssh-" is mu-plugin-docker's --ssh-config, --ssh-option ….
	FlagPrefix string
}

// FlagName is the embedding plugin's name for one of the SSH flags.
func FlagName(prefix, name string) string { return "--" + prefix + name }

// Check refuses settings the client cannot work with: files that cannot
// be read, options that are not Key=Value or that ssh_config does not know.
func (c Config) Check() error {
	for name, f := range map[string]string{"config": c.SSHConfig, "known-hosts": c.KnownHosts, "identity": c.Identity} {
		flag := FlagName(c.FlagPrefix, name)
		if f == "" {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		fh.Close()
	}
	for _, o := range c.Options {
		if err := checkOption(FlagName(c.FlagPrefix, "option"), o); err != nil {
			return err
		}
	}
	return nil
}

// checkOption reads --option as ssh reads -o: Key=Value or "Key Value",
// a keyword ssh_config knows. Include and Match are not options.
func checkOption(flag, o string) error {
	k, v := splitKeyword(o)
	switch lk := strings.ToLower(k); {
	case k == "" || v == "" || strings.ContainsAny(o, "\n\r\x00"):
		return fmt.Errorf("%s %q: want Key=Value, as ssh -o", flag, o)
	case lk == "include" || lk == "match" || lk == "host":
		return fmt.Errorf("%s %q: %s is not allowed here (ssh -o refuses it too)", flag, o, k)
	case optionPolicies[lk].name == "":
		return fmt.Errorf("%s %q: %s is not an ssh_config option the plugin knows", flag, o, k)
	}
	return nil
}

// SafeName keeps a destination printable in messages.
func SafeName(s string) string {
	if len(s) > 100 {
		s = s[:100]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// shQuote single-quotes s for a POSIX shell.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// KeepAlive sends keepalive@openssh.com every ServerAliveInterval (OpenSSH
// answers with a failure; any answer means alive) and closes the connection
// after ServerAliveCountMax unanswered ones, so its calls fail fast. It
// returns once the connection is gone. Not for a connection through a
// ControlMaster: the master keeps its own connection alive, and drops a
// proxy client that sends it a global request.
func (c *Client) KeepAlive(log *slog.Logger) {
	every := c.Resolved.ServerAliveInterval
	if every <= 0 {
		every = defaultAliveInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	missed := 0
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		answered := make(chan struct{})
		go func() {
			_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
			if err == nil {
				close(answered)
			}
		}()
		select {
		case <-answered:
			missed = 0
		case <-c.done:
			return
		case <-time.After(every):
			missed++
			if missed >= c.Resolved.ServerAliveCountMax {
				log.Warn("connection unresponsive; closing", "host", c.Resolved.Alias)
				c.Close()
				return
			}
		}
	}
}
