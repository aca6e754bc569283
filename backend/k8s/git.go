package k8s

import (
	"context"

	"github.com/mu-org/mu-plugins/internal/sandbox"
)

// Commits move with git's smart protocol over exec streams (sandbox.Hosts'
// Fetch and Push): the bridge runs git-upload-pack or git-receive-pack in
// the pod over one pods/exec, its stdout and stderr on separate streams.

// BridgeCommand is the sub-command git's ext:: transport runs.
const BridgeCommand = sandbox.BridgeCommand

// Bridge is the git-bridge sub-command (sandbox.Bridge): `git-bridge POD
// MARK SERVICE PATH` runs SERVICE on PATH in POD on the cluster and
// namespace the environment pins.
func Bridge(ctx context.Context, args []string) int {
	return sandbox.Bridge(ctx, args, "POD", func(ctx context.Context, pod string, env, argv []string) (int, error) {
		b, err := subBackend()
		if err != nil {
			return -1, err
		}
		// pods/exec sets no environment: env(1) does, then the login directory.
		argv = append(append([]string{"env"}, env...), argv...)
		ex, err := executor(b.cfg.Target.REST, b.cs.CoreV1().RESTClient(), b.ns, pod, argv, true)
		if err != nil {
			return -1, err
		}
		code, _, _, err := exitOf(ex.StreamWithContext(ctx, streamStdio()), nil, nil)
		return code, err
	})
}
