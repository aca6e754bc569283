// Command mu-plugin-fake is the reference plugin: every seam, a local link,
// a simulated agent, and scriptable faults (docs/fake.md).
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"time"

	"github.com/mu-org/mu-plugins/backend/fake"
	"github.com/mu-org/mu-plugins/internal/cli"
	"github.com/mu-org/mu-plugins/protocol"
)

func main() {
	var m fake.Main
	code := cli.Main(cli.Plugin{
		Name:  fake.Name,
		Short: "every seam of the protocol, a local link, a simulated agent and injectable faults",
		Flags: func(fs *flag.FlagSet) func(context.Context, *slog.Logger) (protocol.Options, error) {
			return m.Flags(fs)
		},
		Commands: map[string]func(context.Context, []string) int{"view": fake.View},
	}, os.Args[1:])
	if m.Built != nil && m.Built.IgnoreEOF() {
		// The ignore-eof fault: stdin EOF is ignored and the process lingers
		// (2 minutes, so a caller that never kills the group leaks nothing).
		time.Sleep(2 * time.Minute)
	}
	os.Exit(code)
}
