// Command mu-plugin-ssh is mu's link to any SSH host, and its agent jobs
// (under tmux on the host) with their channel. `mu-plugin-ssh view …` is a
// job's view (job.start gives its command). See docs/ssh.md.
package main

import (
	"context"
	"os"

	"github.com/mu-org/mu-plugins/backend/ssh"
	"github.com/mu-org/mu-plugins/internal/cli"
)

func main() {
	name := cli.RegisteredName(os.Args[0], ssh.ChannelName) // mu-plugin-ssh-prod is "ssh-prod", its channel too
	os.Exit(cli.Main(cli.Plugin{
		Name:   name,
		Short:  "any SSH host as mu's link (scripts, git fetch and push) and job host (agents under tmux), resolved and trusted as OpenSSH does",
		Config: &ssh.Config{Channel: name},
		Commands: map[string]func(context.Context, []string) int{
			"git-ssh":       ssh.GitSSH,
			ssh.ViewCommand: ssh.View,
		},
	}, os.Args[1:]))
}
