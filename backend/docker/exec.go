package docker

import (
	"context"
	"errors"
	"io"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/internal/outcap"
	"github.com/mu-org/mu-plugins/protocol"
)

// execOnce runs argv in ctr as a one-off exec (no shell unless argv names
// one), with stdin if given, and returns its exit code once its output has
// ended: an exec inspected before its stream's EOF can read exit 0.
func execOnce(ctx context.Context, api execer, ctr string, argv, env []string, stdin io.Reader) (int, []byte, []byte, error) {
	ex, err := api.ExecCreate(ctx, ctr, client.ExecCreateOptions{
		AttachStdin: stdin != nil, AttachStdout: true, AttachStderr: true, Cmd: argv, Env: env,
	})
	if err != nil {
		return -1, nil, nil, err
	}
	hj, err := api.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return -1, nil, nil, err
	}
	defer hj.Close()
	stop := context.AfterFunc(ctx, hj.Close)
	defer stop()
	if stdin != nil {
		go func() {
			_, _ = io.Copy(hj.Conn, stdin)
			_ = hj.CloseWrite()
		}()
	}
	out, errb := outcap.New(outcap.MaxStream), outcap.New(outcap.MaxStream)
	if _, err := stdcopy.StdCopy(out, errb, hj.Reader); err != nil {
		if ctx.Err() != nil {
			return -1, out.Kept(), errb.Kept(), ctx.Err()
		}
		return -1, out.Kept(), errb.Kept(), err
	}
	ins, err := api.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	for err == nil && ins.Running { // output ended; the process is on its way out
		select {
		case <-ctx.Done():
			return -1, out.Kept(), errb.Kept(), ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
		ins, err = api.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	}
	if err != nil {
		return -1, out.Kept(), errb.Kept(), err
	}
	return ins.ExitCode, out.Kept(), errb.Kept(), nil
}

// engineErr classifies an Engine error for a read or a link call: an
// unreachable Engine or a cancelled call is retryable, a missing or stopped
// container permanent (host.status tells which).
func engineErr(err error, what string) error {
	switch {
	case cerrdefs.IsNotFound(err), cerrdefs.IsConflict(err): // gone, or not running
		return protocol.Wrap(protocol.Permanent, err, what)
	case client.IsErrConnectionFailed(err), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return protocol.Wrap(protocol.Retryable, err, what)
	}
	return protocol.Wrap(protocol.Retryable, err, what)
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
