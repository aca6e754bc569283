package docker

import (
	"github.com/mu-org/mu-plugins/internal/cli"
	"github.com/mu-org/mu-plugins/internal/sandbox"
	"github.com/mu-org/mu-plugins/protocol"
)

// MaxScriptBytes is link.maxScriptBytes (sandbox.MaxScriptBytes: Linux's
// cap on one argv string).
const MaxScriptBytes = sandbox.MaxScriptBytes

// InFlightMs is host.acquire's inFlightMs: an acquire's create, start and
// readiness exec end well inside it.
const InFlightMs = 120_000

// ChannelName is the channel seam's name under the plugin's own name.
const ChannelName = "docker"

// Name is the plugin's registered name, read from the executable's
// basename as mu runs it (cli.RegisteredName): mu-plugin-docker is
// "docker", and mu-plugin-docker-gpu is "docker-gpu", so several Engines
// are several registrations (mu plugin add docker-gpu --
// …/mu-plugin-docker-gpu --context gpu), each with its own name and
// channel.
func Name(argv0 string) string { return cli.RegisteredName(argv0, ChannelName) }

// Seams are the plugin's seams: host and link, and tmuxjob's job seam
// (kind "docker") with its channel named channel (the plugin's name: a
// channel's name is unique among the registered plugins).
func Seams(channel string) protocol.Seams {
	return sandbox.Seams("docker", channel, InFlightMs)
}
