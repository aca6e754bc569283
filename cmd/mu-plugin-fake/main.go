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
	var fk *fake.Fake
	code := cli.Main(cli.Plugin{
		Name:  fake.Name,
		Short: "every seam of the protocol, a local link, a simulated agent and injectable faults",
		Flags: func(fs *flag.FlagSet) func(context.Context, *slog.Logger) (protocol.Options, error) {
			var cfg fake.Config
			scenario := fs.String("scenario", "", "a JSON file of faults to inject (docs/fake.md)")
			fs.StringVar(&cfg.Instance, "instance", "fake", "the instance named in the handshake")
			fs.StringVar(&cfg.StateDir, "state", "", "keep the world in this directory between invocations (default: in memory)")
			fs.StringVar(&cfg.Root, "root", "", "where hosts' login directories live (default: DIR/root with --state, else a temp dir)")
			fs.Int64Var(&cfg.TurnMs, "turn-ms", 200, "how long a simulated turn takes to settle")
			fs.Int64Var(&cfg.EffectMs, "effect-ms", 0, "how long host.acquire and job.start take to land")
			fs.StringVar(&cfg.FirstTurn, "first-turn", "on-send", "the job kind's firstTurn: on-send or at-start")
			return func(ctx context.Context, log *slog.Logger) (protocol.Options, error) {
				cfg.Log = log
				if *scenario != "" {
					s, err := fake.LoadScenario(*scenario)
					if err != nil {
						return protocol.Options{}, err
					}
					cfg.Scenario = s
				}
				f, err := fake.New(cfg)
				if err != nil {
					return protocol.Options{}, err
				}
				fk = f
				f.StartupFaults(os.Stdout)
				return f.Options(), nil
			}
		},
		Commands: map[string]func(context.Context, []string) int{
			"view": func(ctx context.Context, args []string) int { return fake.ViewCommand(ctx, args, os.Stdout) },
		},
	}, os.Args[1:])
	if fk != nil && fk.IgnoreEOF() {
		for { // the fault: stdin EOF is ignored and the process lingers
			time.Sleep(time.Hour)
		}
	}
	os.Exit(code)
}
