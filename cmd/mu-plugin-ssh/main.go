// Command mu-plugin-ssh is mu's link to any SSH host. See docs/ssh.md.
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"

	sshlink "github.com/mu-org/mu-plugins/backend/ssh"
	"github.com/mu-org/mu-plugins/internal/cli"
	"github.com/mu-org/mu-plugins/protocol"
)

func main() {
	os.Exit(cli.Main(cli.Plugin{
		Name:  "ssh",
		Short: "a link to any SSH host (scripts, git fetch and push), resolved and trusted as OpenSSH does",
		Flags: func(fs *flag.FlagSet) func(context.Context, *slog.Logger) (protocol.Options, error) {
			var c sshlink.Config
			fs.StringVar(&c.SSHConfig, "config", "", "ssh_config file to resolve hosts with (default: OpenSSH's ~/.ssh/config and /etc/ssh/ssh_config)")
			fs.StringVar(&c.KnownHosts, "known-hosts", "", "known_hosts file to verify host keys with, replacing UserKnownHostsFile/GlobalKnownHostsFile")
			fs.StringVar(&c.Identity, "identity", "", "private key file offered before the configured IdentityFile ones")
			fs.StringVar(&c.Instance, "instance", "", `instance name (default "ssh:" + the absolute path of the ssh_config in use)`)
			fs.IntVar(&c.MaxSessions, "max-sessions", sshlink.DefaultMaxSessions, "the servers' MaxSessions: scripts run at most this many minus two at once per connection (one session kept for stops, one for sessions the server is still closing)")
			return func(_ context.Context, log *slog.Logger) (protocol.Options, error) {
				if err := c.Check(); err != nil {
					return protocol.Options{}, err
				}
				return sshlink.New(c, log).Options(), nil
			}
		},
		Commands: map[string]func(context.Context, []string) int{"git-ssh": sshlink.GitSSH},
	}, os.Args[1:]))
}
