// Command mu-plugin-bench is a minimal plugin on protocol.Serve for the caller's
// benchmarks (programs.Build builds it): it serves job.status and a no-op
// link.exec.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mu-org/mu-plugins/protocol"
)

func main() {
	err := protocol.Serve(context.Background(), protocol.Options{
		Name: "bench", Version: "0.0.1", Instance: "bench",
		Seams: protocol.Seams{
			Link: &protocol.LinkSeam{Slots: protocol.SlotsSelf, RemoteOnTimeout: protocol.RemoteStopped,
				Quiescence: protocol.QuiescenceProvable, MaxScriptBytes: 1 << 16, Checks: []string{}},
			Job: &protocol.JobSeam{Kind: "bench", View: protocol.ViewBound, Handle: protocol.HandlePane,
				Start: protocol.KeyCaps{Lookup: true}, Checks: []string{}},
		},
		Handlers: map[string]protocol.Handler{
			protocol.MethodJobStatus.Name: func(context.Context, *protocol.Call) (any, error) {
				return protocol.JobStatus{State: protocol.JobRunning}, nil
			},
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
