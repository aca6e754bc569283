package tmuxjob

import (
	"context"

	"github.com/mu-org/mu-plugins/protocol"
)

// Seams are the seams this package serves, the job (of kind) and its
// channel (named channel), for a plugin's declaration: a backend adds its
// link and host. checks lists the `host check` phases the job seam
// contributes to (nil: none).
func Seams(kind, channel string, checks []string) protocol.Seams {
	if checks == nil {
		checks = []string{}
	}
	job := &protocol.JobSeam{
		Kind:   kind,
		View:   protocol.ViewDetached,
		Handle: protocol.HandleReply,
		// lookup by the job key; a fenced none makes the key final.
		Start:        protocol.KeyCaps{Lookup: true, FenceKey: true},
		Channel:      channel,
		Checks:       checks,
		FirstTurn:    protocol.FirstTurnOnSend,
		OutlivesHost: protocol.Bool(false),
		// Exactly what Start carries out: the command line, env (and cwd);
		// no sockets; full-access, and read-only for the adapters that enforce
		// it (checkRole).
		Honours: &protocol.Honours{Command: true, Env: true, Sockets: false, Roles: []string{"full-access", "read-only"}},
	}
	ch := &protocol.ChannelSeam{Name: channel, Caps: protocol.ChannelCaps{
		Fence:      "none",
		Receipt:    "exact",
		Dedupe:     "exact",
		Steer:      "none",
		Interrupt:  "native",
		Fresh:      "in-place",
		Answer:     true,
		Command:    true,
		Watch:      "stream",
		SettleText: "truncated",
	}}
	return protocol.Seams{Job: job, Channel: ch}
}

// Resolver finds the Jobs for a call's target (the docker backend: the
// container target.host names, reached through its exec).
type Resolver func(ctx context.Context, t protocol.Target) (*Jobs, error)
