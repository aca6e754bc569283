package docker

import (
	"context"

	"github.com/mu-org/mu-plugins/protocol"
)

// notYetMethods are the job and channel methods: declared (a host seam needs
// a job seam to load) but not served until issue 6.
var notYetMethods = []string{
	protocol.MethodJobStart, protocol.MethodJobLookup, protocol.MethodJobStatus,
	protocol.MethodJobStop, protocol.MethodJobAttach, protocol.MethodJobCheckSteps,
	protocol.MethodChannelReadStates, protocol.MethodChannelBaseline, protocol.MethodChannelReceipt,
	protocol.MethodChannelLastRun, protocol.MethodChannelWatch, protocol.MethodChannelSend,
	protocol.MethodChannelFresh, protocol.MethodChannelCommand, protocol.MethodChannelInterrupt,
	protocol.MethodChannelAbort, protocol.MethodChannelAnswer,
}

// notYet answers a job or channel call: permanent, nothing happened.
func notYet(_ context.Context, c *protocol.Call) (any, error) {
	return nil, protocol.Errorf(protocol.Permanent, "%s: not implemented yet (issue 6): mu-plugin-docker serves host and link only", c.Method)
}
