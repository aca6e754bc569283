// Command pause is the test cluster's pod sandbox process (the CRI's
// sandbox_image): it holds the pod's namespaces open and does nothing else.
// Like Kubernetes' own pause.c it exits 0 on SIGINT or SIGTERM and reaps any
// child handed to it. Built static (CGO_ENABLED=0) and packaged as an image
// by integration/k8s/build.sh, since no registry is reachable here.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if os.Getpid() != 1 {
		os.Stderr.WriteString("pause: warning: not PID 1\n")
	}
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Stderr.WriteString("pause: shutting down, got " + s.String() + "\n")
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
