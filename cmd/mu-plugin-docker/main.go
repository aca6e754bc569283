// Command mu-plugin-docker is mu's Docker plugin: containers as provider
// hosts, their link, and detached agent jobs in them with their channel.
// `mu-plugin-docker view …` is a job's view (job.start gives its command).
// See docs/docker.md.
package main

import (
	"context"
	"os"

	"github.com/mu-org/mu-plugins/backend/docker"
	"github.com/mu-org/mu-plugins/internal/cli"
)

func main() {
	name := docker.Name(os.Args[0]) // mu-plugin-docker-gpu is "docker-gpu", its channel too
	os.Exit(cli.Main(cli.Plugin{
		Name:     name,
		Short:    "Docker containers as mu's provider hosts (the Engine chosen as the docker CLI does: --context, DOCKER_HOST, DOCKER_CONTEXT)",
		Config:   &docker.Config{Channel: name},
		Register: "--image IMAGE",
		Commands: map[string]func(context.Context, []string) int{
			docker.BridgeCommand: docker.Bridge,
			docker.ViewCommand:   docker.View,
		},
	}, os.Args[1:]))
}
