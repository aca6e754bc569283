// Command mu-plugin-ssh is mu's link to any SSH host. See docs/ssh.md.
package main

import (
	"context"
	"os"

	"github.com/mu-org/mu-plugins/backend/ssh"
	"github.com/mu-org/mu-plugins/internal/cli"
)

func main() {
	os.Exit(cli.Main(cli.Plugin{
		Name:     "ssh",
		Short:    "a link to any SSH host (scripts, git fetch and push), resolved and trusted as OpenSSH does",
		Config:   &ssh.Config{},
		Commands: map[string]func(context.Context, []string) int{"git-ssh": ssh.GitSSH},
	}, os.Args[1:]))
}
