// Command mu-plugin-k8s is mu's Kubernetes plugin: pods as provider hosts,
// their link over pods/exec, and detached agent jobs in them with their
// channel. `mu-plugin-k8s view …` is a job's view (job.start gives its
// command); `git-bridge` is git's ext:: transport. See docs/k8s.md.
package main

import (
	"context"
	"os"

	"github.com/mu-org/mu-plugins/backend/k8s"
	"github.com/mu-org/mu-plugins/internal/cli"
)

func main() {
	os.Exit(cli.Main(cli.Plugin{
		Name:     "k8s",
		Short:    "Kubernetes pods as mu's provider hosts (the cluster chosen as kubectl does: --kubeconfig, KUBECONFIG, --context, --namespace, in-cluster)",
		Config:   &k8s.Config{},
		Register: "--image IMAGE --run-as-user UID",
		Commands: map[string]func(context.Context, []string) int{
			k8s.BridgeCommand:     k8s.Bridge,
			k8s.ViewCommand:       k8s.View,
			k8s.CredentialCommand: k8s.CredentialHelper,
		},
	}, os.Args[1:]))
}
