// Command mu-plugin-fake is the reference plugin: every seam, a local link,
// a simulated agent, and scriptable faults (docs/fake.md).
package main

import (
	"context"
	"os"

	"github.com/mu-org/mu-plugins/backend/fake"
	"github.com/mu-org/mu-plugins/internal/cli"
)

func main() {
	var cfg fake.Config
	code := cli.Main(cli.Plugin{
		Name:     fake.Name,
		Short:    "every seam of the protocol, a local link, a simulated agent and injectable faults",
		Config:   &cfg,
		Commands: map[string]func(context.Context, []string) int{"view": fake.View},
	}, os.Args[1:])
	cfg.Scenario.Linger() // the ignore-eof fault: the process outlives stdin's EOF
	os.Exit(code)
}
