package fake

import (
	"context"
	"flag"
	"log/slog"
	"os"

	"github.com/mu-org/mu-plugins/protocol"
)

// Main is what cmd/mu-plugin-fake's flags build: Flags registers them, and
// its Built field is the plugin once the returned function has run.
type Main struct {
	Built *Fake
}

// Flags registers the fake's flags on fs and returns the function that,
// after parsing, builds the plugin (firing the scenario's start-up faults on
// stdout) and its Serve options.
func (m *Main) Flags(fs *flag.FlagSet) func(context.Context, *slog.Logger) (protocol.Options, error) {
	var cfg Config
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
			s, err := LoadScenario(*scenario)
			if err != nil {
				return protocol.Options{}, err
			}
			cfg.Scenario = s
		}
		f, err := New(cfg)
		if err != nil {
			return protocol.Options{}, err
		}
		m.Built = f
		f.StartupFaults()
		return f.Options(), nil
	}
}

// View is the `view` sub-command.
func View(ctx context.Context, args []string) int { return ViewCommand(ctx, args, os.Stdout) }
