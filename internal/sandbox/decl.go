package sandbox

import (
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// MaxScriptBytes is link.maxScriptBytes. A script travels on the exec
// channel's stdin and runs as one argv string (`sh -c SCRIPT`), which
// Linux caps at 128 KiB (MAX_ARG_STRLEN, terminating NUL included).
const MaxScriptBytes = 128*1024 - 1024

// Seams are a provider's seams: host (keyed acquire with lookup and fence,
// inFlightMs as the provider says) and link (fetch, push, runs stopped on
// timeout, the reach checks), and tmuxjob's job seam of kind with its
// channel named channel.
func Seams(kind, channel string, inFlightMs int64) protocol.Seams {
	s := tmuxjob.Seams(kind, channel, []string{})
	s.Host = &protocol.HostSeam{Acquire: protocol.KeyCaps{
		Lookup: true, FenceKey: true, InFlightMs: protocol.Int64(inFlightMs),
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
