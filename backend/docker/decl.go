package docker

import "github.com/mu-org/mu-plugins/protocol"

// MaxScriptBytes is link.maxScriptBytes. A script travels on the exec's
// stdin and runs as one argv string (`sh -c SCRIPT`), which Linux caps at
// 128 KiB (MAX_ARG_STRLEN, terminating NUL included).
const MaxScriptBytes = 128*1024 - 1024

// InFlightMs is host.acquire's inFlightMs: an acquire's create, start and
// readiness exec end well inside it.
const InFlightMs = 120_000

// ChannelName is the channel seam's name.
const ChannelName = "docker"

// Declaration is the plugin's seams. host and link are served. job and
// channel are declared only because mu's load rules refuse a host seam
// without link and job: every job.* and channel.* call answers a permanent
// "not implemented yet (issue 6)" error until issue 6 lands.
func Declaration() protocol.Seams {
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
		Job: &protocol.JobSeam{
			Kind:    "docker",
			View:    protocol.ViewDetached,
			Handle:  protocol.HandleReply,
			Start:   protocol.KeyCaps{Lookup: true, FenceKey: true},
			Channel: ChannelName,
			Checks:  []string{},
		},
		Channel: &protocol.ChannelSeam{Name: ChannelName, Caps: protocol.ChannelCaps{
			Fence: "none", Receipt: "none", Dedupe: "none", Steer: "none", Interrupt: "none",
			Fresh: "none", Answer: false, Command: false, Watch: "stream", SettleText: "truncated",
		}},
	}
}
