package ssh

import (
	"context"
	"flag"
	"log/slog"
	"strings"

	"github.com/mu-org/mu-plugins/protocol"
)

// Flags registers the plugin's flags on fs, bound to c.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.SSHConfig, "config", "", "the ssh_config `FILE` to resolve hosts with, as `ssh -F FILE` (default: OpenSSH's ~/.ssh/config and /etc/ssh/ssh_config)")
	fs.Var((*optionFlag)(&c.Options), "option", "an ssh_config `Key=Value` for the destination, as `ssh -o Key=Value`; repeatable")
	fs.StringVar(&c.KnownHosts, "known-hosts", "", "the known_hosts `FILE` to verify host keys with, replacing UserKnownHostsFile and GlobalKnownHostsFile")
	fs.StringVar(&c.Identity, "identity", "", "a private key `FILE` offered before the configured IdentityFile ones, as `ssh -i FILE`")
	fs.StringVar(&c.Instance, "instance", "", "the handshake's instance `NAME` (default \"ssh:\" and the absolute path of the ssh_config in use)")
	fs.IntVar(&c.MaxSessions, "max-sessions", DefaultMaxSessions, "the servers' MaxSessions `N`: scripts run at most N-2 at once per connection (one session is kept for stops, one for sessions the server is still closing)")
}

// optionFlag collects the repeatable --option.
type optionFlag []string

func (o *optionFlag) String() string     { return strings.Join(*o, " ") }
func (o *optionFlag) Set(v string) error { *o = append(*o, v); return nil }

// Open checks the flags (Check) and builds the backend: its Serve options.
func (c *Config) Open(_ context.Context, log *slog.Logger) (protocol.Options, error) {
	if err := c.Check(); err != nil {
		return protocol.Options{}, err
	}
	return New(*c, log).Options(), nil
}
