// Command mu-plugin-docker is mu's Docker plugin: containers as provider
// hosts, their link, and detached agent jobs in them with their channel.
// `mu-plugin-docker view …` is a job's view (job.start gives its command).
// See docs/docker.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/mu-org/mu-plugins/backend/docker"
	"github.com/mu-org/mu-plugins/internal/cli"
	"github.com/mu-org/mu-plugins/protocol"
)

func main() {
	os.Exit(cli.Main(cli.Plugin{
		Name:  "docker",
		Short: "Docker containers as mu's provider hosts (DOCKER_HOST names the Engine)",
		Flags: flags,
		Commands: map[string]func(context.Context, []string) int{
			docker.BridgeCommand: docker.Bridge,
			docker.ViewCommand:   docker.View,
		},
	}, os.Args[1:]))
}

func flags(fs *flag.FlagSet) func(context.Context, *slog.Logger) (protocol.Options, error) {
	var cfg docker.Config
	cfg.Labels = map[string]string{}
	fs.StringVar(&cfg.Image, "image", docker.DefaultImage, "the image of a host's container (the image param overrides it); never pulled")
	fs.StringVar(&cfg.Instance, "instance", "", `the instance declared (default "docker-" and the Engine's ID)`)
	fs.StringVar(&cfg.Prefix, "prefix", "mu", "container names are PREFIX-<hash of the acquire key>")
	fs.IntVar(&cfg.MaxSessions, "max-sessions", 8, "long-lived exec channels kept per container")
	fs.DurationVar(&cfg.AbandonAfter, "abandon-after", 0, "lookup removes a never-started container older than this (default inFlightMs, 2m; lower is for tests)")
	fs.Func("label", "an extra label k=v on every container (repeatable)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("want k=v")
		}
		cfg.Labels[k] = v
		return nil
	})
	return func(ctx context.Context, log *slog.Logger) (protocol.Options, error) {
		api, err := docker.NewClient()
		if err != nil {
			return protocol.Options{}, err
		}
		b, err := docker.New(ctx, cfg, api, log)
		if err != nil {
			return protocol.Options{}, err
		}
		return b.Options(), nil
	}
}
