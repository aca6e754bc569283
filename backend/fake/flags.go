package fake

import (
	"context"
	"flag"
	"log/slog"

	"github.com/mu-org/mu-plugins/protocol"
)

// Flags registers the plugin's flags on fs, bound to c.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.ScenarioFile, "scenario", "", "a JSON file of faults to inject (docs/fake.md)")
	fs.StringVar(&c.Instance, "instance", "fake", "the instance named in the handshake")
	fs.StringVar(&c.StateDir, "state", "", "keep the world in this directory between invocations (default: in memory)")
	fs.StringVar(&c.Root, "root", "", "where hosts' login directories live (default: DIR/root with --state, else a temp dir)")
	fs.Int64Var(&c.TurnMs, "turn-ms", 200, "how long a simulated turn takes to settle")
	fs.Int64Var(&c.EffectMs, "effect-ms", 0, "how long host.acquire and job.start take to land")
	fs.StringVar(&c.FirstTurn, "first-turn", "on-send", "the job kind's firstTurn: on-send or at-start")
}

// Open reads the scenario file, builds the plugin, fires the scenario's
// start-up faults (on stdout, before the handshake) and returns its Serve
// options. c.Scenario is set only once the plugin is built, so a plugin
// that refused to start never lingers (Scenario.Linger).
func (c *Config) Open(_ context.Context, log *slog.Logger) (protocol.Options, error) {
	cfg := *c
	cfg.Log = log
	if c.ScenarioFile != "" {
		s, err := LoadScenario(c.ScenarioFile)
		if err != nil {
			return protocol.Options{}, err
		}
		cfg.Scenario = s
	}
	f, err := New(cfg)
	if err != nil {
		return protocol.Options{}, err
	}
	c.Scenario = cfg.Scenario
	f.StartupFaults()
	return f.Options(), nil
}
