package main

import (
	"os/exec"
	"testing"

	"github.com/mu-org/mu-plugins/protocol"
)

// BenchmarkLinkExecTrue is one link.exec of `true` through the running fake:
// the request, a fresh /bin/sh in the host directory, the reply.
func BenchmarkLinkExecTrue(b *testing.B) {
	p := start(b)
	params := execP("box", "true", ".", 10000)
	for b.Loop() {
		if _, err := p.Call(b.Context(), protocol.MethodLinkExec.Name, params, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShTrue is the baseline: `sh -c true` started directly.
func BenchmarkShTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/sh", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
