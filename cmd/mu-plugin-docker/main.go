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
		Name:  docker.Name(os.Args[0]),
		Short: "Docker containers as mu's provider hosts (the Engine chosen as the docker CLI does: --context, DOCKER_HOST, DOCKER_CONTEXT)",
		Flags: flags,
		Commands: map[string]func(context.Context, []string) int{
			docker.BridgeCommand: docker.Bridge,
			docker.ViewCommand:   docker.View,
		},
	}, os.Args[1:]))
}

func flags(fs *flag.FlagSet) func(context.Context, *slog.Logger) (protocol.Options, error) {
	var cfg docker.Config
	var dockerContext string
	var sshFlags docker.SSHFlags
	cfg.Labels = map[string]string{}
	fs.StringVar(&dockerContext, "context", "", "the docker context whose Engine to use (else DOCKER_HOST, DOCKER_CONTEXT, the current context: as the docker CLI)")
	fs.StringVar(&cfg.Image, "image", "", "a host's image (the image param overrides it); never pulled. No default: see docs/docker.md, Images")
	fs.StringVar(&cfg.Instance, "instance", "", `the instance declared (default "docker-" and a hash of the Engine's address)`)
	fs.StringVar(&cfg.Prefix, "prefix", "mu", "container names are PREFIX-<hash of the acquire key>")
	fs.IntVar(&cfg.MaxSessions, "max-sessions", 8, "long-lived exec channels kept per container")
	fs.DurationVar(&cfg.AbandonAfter, "abandon-after", 0, "lookup removes a never-started container whose creator it cannot check, older than this (default inFlightMs, 2m; lower is for tests)")
	fs.Func("label", "an extra label k=v on every container (repeatable)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("want k=v")
		}
		cfg.Labels[k] = v
		return nil
	})
	sshFlags.Register(fs)
	return func(_ context.Context, log *slog.Logger) (protocol.Options, error) {
		ep, err := docker.ResolveEndpoint(dockerContext, os.Getenv)
		if err == nil {
			err = ep.UseSSH(sshFlags)
		}
		if err != nil {
			return protocol.Options{}, err
		}
		cfg.Endpoint, cfg.Channel = ep, docker.Name(os.Args[0])
		b, err := docker.Open(cfg, log)
		if err != nil {
			return protocol.Options{}, err
		}
		return b.Options(), nil
	}
}
