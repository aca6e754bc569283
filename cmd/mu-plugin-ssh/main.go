// Command mu-plugin-ssh is mu's link to any SSH host. See docs/ssh.md.
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"strings"

	"github.com/mu-org/mu-plugins/backend/ssh"
	"github.com/mu-org/mu-plugins/internal/cli"
	"github.com/mu-org/mu-plugins/protocol"
)

// options collects the repeatable --option.
type options []string

func (o *options) String() string     { return strings.Join(*o, " ") }
func (o *options) Set(v string) error { *o = append(*o, v); return nil }

func main() {
	os.Exit(cli.Main(cli.Plugin{
		Name:  "ssh",
		Short: "a link to any SSH host (scripts, git fetch and push), resolved and trusted as OpenSSH does",
		Flags: func(fs *flag.FlagSet) func(context.Context, *slog.Logger) (protocol.Options, error) {
			var c ssh.Config
			fs.StringVar(&c.SSHConfig, "config", "", "the ssh_config `FILE` to resolve hosts with, as `ssh -F FILE` (default: OpenSSH's ~/.ssh/config and /etc/ssh/ssh_config)")
			fs.Var((*options)(&c.Options), "option", "an ssh_config `Key=Value` for the destination, as `ssh -o Key=Value`; repeatable")
			fs.StringVar(&c.KnownHosts, "known-hosts", "", "the known_hosts `FILE` to verify host keys with, replacing UserKnownHostsFile and GlobalKnownHostsFile")
			fs.StringVar(&c.Identity, "identity", "", "a private key `FILE` offered before the configured IdentityFile ones, as `ssh -i FILE`")
			fs.StringVar(&c.Instance, "instance", "", "the handshake's instance `NAME` (default \"ssh:\" and the absolute path of the ssh_config in use)")
			fs.IntVar(&c.MaxSessions, "max-sessions", ssh.DefaultMaxSessions, "the servers' MaxSessions `N`: scripts run at most N-2 at once per connection (one session is kept for stops, one for sessions the server is still closing)")
			return func(_ context.Context, log *slog.Logger) (protocol.Options, error) {
				if err := c.Check(); err != nil {
					return protocol.Options{}, err
				}
				return ssh.New(c, log).Options(), nil
			}
		},
		Commands: map[string]func(context.Context, []string) int{"git-ssh": ssh.GitSSH},
	}, os.Args[1:]))
}
