package k8s

import (
	"github.com/mu-org/mu-plugins/backend/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// MaxScriptBytes is link.maxScriptBytes. A script travels on the exec
// channel's stdin and runs as one argv string (`sh -c SCRIPT`), which
// Linux caps at 128 KiB (MAX_ARG_STRLEN, terminating NUL included).
const MaxScriptBytes = 128*1024 - 1024

// InFlightMs is host.acquire's inFlightMs: an acquire's create, the pod's
// scheduling and start, and its readiness exec end well inside it.
const InFlightMs = 300_000

// ChannelName is the channel seam's name and the job kind.
const ChannelName = "k8s"

// Seams are the plugin's seams: host and link, and tmuxjob's job seam
// (kind "k8s") with its channel.
func Seams() protocol.Seams {
	s := tmuxjob.Seams(ChannelName, ChannelName, []string{})
	s.Host = &protocol.HostSeam{Acquire: protocol.KeyCaps{
		Lookup: true, FenceKey: true, InFlightMs: protocol.Int64(InFlightMs),
	}}
	s.Link = &protocol.LinkSeam{
		Fetch:           true,
		Push:            protocol.Bool(true),
		Slots:           protocol.SlotsSelf,
		RemoteOnTimeout: protocol.RemoteStopped,
		Quiescence:      protocol.QuiescenceProvable,
		MaxScriptBytes:  MaxScriptBytes,
		Checks:          []string{protocol.PhaseReach},
	}
	return s
}
