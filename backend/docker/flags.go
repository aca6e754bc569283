package docker

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/mu-org/mu-plugins/protocol"
)

// Flags registers the plugin's flags on fs, bound to c.
func (c *Config) Flags(fs *flag.FlagSet) {
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	fs.StringVar(&c.Context, "context", "", "the docker context whose Engine to use (else DOCKER_HOST, DOCKER_CONTEXT, the current context: as the docker CLI)")
	fs.StringVar(&c.Image, "image", "", "a host's image (the image param overrides it); never pulled. No default: see docs/docker.md, Images")
	fs.StringVar(&c.Instance, "instance", "", `the instance declared (default "docker-" and a hash of the Engine's address)`)
	fs.StringVar(&c.Prefix, "prefix", "mu", "container names are PREFIX-<hash of the acquire key>")
	fs.IntVar(&c.MaxSessions, "max-sessions", 8, "long-lived exec channels kept per container")
	fs.DurationVar(&c.AbandonAfter, "abandon-after", 0, "lookup removes a never-started container whose creator it cannot check, older than this (default inFlightMs, 2m; lower is for tests)")
	fs.Func("label", "an extra label k=v on every container (repeatable)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("want k=v")
		}
		c.Labels[k] = v
		return nil
	})
}

// Open resolves the Engine from --context and the environment, as the
// docker CLI does (ResolveEndpoint), and builds the backend (Open): its
// Serve options.
func (c *Config) Open(_ context.Context, log *slog.Logger) (protocol.Options, error) {
	ep, err := ResolveEndpoint(c.Context, os.Getenv)
	if err != nil {
		return protocol.Options{}, err
	}
	c.Endpoint = ep
	b, err := Open(*c, log)
	if err != nil {
		return protocol.Options{}, err
	}
	return b.Options(), nil
}
