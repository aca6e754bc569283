package docker

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/internal/sandbox"
)

// Commits move with git's smart protocol, not tar copies (sandbox.Hosts'
// Fetch and Push): the bridge runs git-upload-pack or git-receive-pack in
// the container over an exec, demultiplexing the exec's stream so git sees
// only protocol bytes.

// BridgeCommand is the sub-command git's ext:: transport runs.
const BridgeCommand = sandbox.BridgeCommand

// Bridge is the git-bridge sub-command (sandbox.Bridge): `git-bridge
// CONTAINER MARK SERVICE PATH` runs SERVICE on PATH in CONTAINER through
// the Engine the environment pins.
func Bridge(ctx context.Context, args []string) int {
	return sandbox.Bridge(ctx, args, "CONTAINER", func(ctx context.Context, ctr string, env, argv []string) (int, error) {
		api, err := NewClient()
		if err != nil {
			return -1, err
		}
		defer api.Close()
		return bridge(ctx, api, ctr, argv, env, os.Stdin, os.Stdout, os.Stderr)
	})
}

func bridge(ctx context.Context, api execer, ctr string, argv, env []string, in io.Reader, out, errw io.Writer) (int, error) {
	ex, err := api.ExecCreate(ctx, ctr, client.ExecCreateOptions{
		AttachStdin: true, AttachStdout: true, AttachStderr: true, Cmd: argv, Env: env,
	})
	if err != nil {
		return -1, err
	}
	hj, err := api.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return -1, err
	}
	defer hj.Close()
	go func() {
		_, _ = io.Copy(hj.Conn, in)
		_ = hj.CloseWrite()
	}()
	if _, err := stdcopy.StdCopy(out, errw, hj.Reader); err != nil {
		return -1, err
	}
	for {
		ins, err := api.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
		if err != nil {
			return -1, err
		}
		if !ins.Running {
			return ins.ExitCode, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
}
