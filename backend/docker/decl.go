package docker

import (
	"github.com/mu-org/mu-plugins/backend/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// MaxScriptBytes is link.maxScriptBytes. A script travels on the exec's
// stdin and runs as one argv string (`sh -c SCRIPT`), which Linux caps at
// 128 KiB (MAX_ARG_STRLEN, terminating NUL included).
const MaxScriptBytes = 128*1024 - 1024

// InFlightMs is host.acquire's inFlightMs: an acquire's create, start and
// readiness exec end well inside it.
const InFlightMs = 120_000

// ChannelName is the channel seam's name.
const ChannelName = "docker"

// Declaration is the plugin's seams: host and link, and tmuxjob's job
// seam (kind "docker") and channel.
func Declaration() protocol.Seams {
	job, ch := tmuxjob.Declaration("docker", ChannelName, []string{})
	return protocol.Seams{
		Host: &protocol.HostSeam{Acquire: protocol.KeyCaps{
			Lookup: true, FenceKey: true, InFlightMs: protocol.Int64(InFlightMs),
		}},
		Link: &protocol.LinkSeam{
			Fetch:           true,
			Push:            protocol.Bool(true),
			Slots:           protocol.SlotsSelf,
			RemoteOnTimeout: protocol.RemoteStopped,
			Quiescence:      protocol.QuiescenceProvable,
			MaxScriptBytes:  MaxScriptBytes,
			Checks:          []string{protocol.PhaseReach},
		},
		Job:     job,
		Channel: ch,
	}
}
