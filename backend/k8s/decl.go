package k8s

import (
	"github.com/mu-org/mu-plugins/internal/sandbox"
	"github.com/mu-org/mu-plugins/protocol"
)

// MaxScriptBytes is link.maxScriptBytes (sandbox.MaxScriptBytes: Linux's
// cap on one argv string).
const MaxScriptBytes = sandbox.MaxScriptBytes

// InFlightMs is host.acquire's inFlightMs: an acquire's create, the pod's
// scheduling and start, and its readiness exec end well inside it.
const InFlightMs = 300_000

// ChannelName is the channel seam's name and the job kind.
const ChannelName = "k8s"

// Seams are the plugin's seams: host and link, and tmuxjob's job seam
// (kind "k8s") with its channel.
func Seams() protocol.Seams {
	return sandbox.Seams(ChannelName, ChannelName, InFlightMs)
}
