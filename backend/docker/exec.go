package docker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/internal/execchan"
	"github.com/mu-org/mu-plugins/protocol"
)

// exec serves link.exec.
func (b *Backend) exec(ctx context.Context, call *protocol.Call, p protocol.ExecParams) (any, error) {
	ctr, err := b.hostOf(ctx, p.Target)
	if err != nil {
		return nil, err
	}
	if len(p.Script) > MaxScriptBytes {
		return nil, protocol.Errorf(protocol.Permanent, "script is %d bytes; maxScriptBytes is %d", len(p.Script), MaxScriptBytes)
	}
	if strings.IndexByte(p.Script, 0) >= 0 || strings.ContainsAny(p.Cwd, "\x00\n") {
		return nil, protocol.Errorf(protocol.Permanent, "a script cannot hold a NUL byte, nor a cwd a NUL or a newline")
	}
	cwd := p.Cwd
	if cwd == "" {
		cwd = "."
	}
	return b.runScript(ctx, ctr, p.Script, cwd, protocol.RunTimeout(p.TimeoutMs))
}

// runScript runs script in ctr over a pooled exec channel. On timeout it
// kills the run's processes inside the container and answers only once
// none is left, with exitCode null.
func (b *Backend) runScript(ctx context.Context, ctr, script, cwd string, timeout time.Duration) (*protocol.ExecResult, error) {
	return b.pool(ctr).Script(ctx, script, cwd, timeout)
}

// stopRun kills every process marked mark inside ctr from a second exec (the
// Engine has no exec-kill API) and returns nil only once none is left.
func (b *Backend) stopRun(ctx context.Context, ctr, mark string) error {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	code, _, stderr, err := execOnce(kctx, b.api, ctr, []string{"/bin/sh", "-c", execchan.StopScript, "sh", mark}, nil, nil)
	if err != nil {
		return err
	}
	if code != 0 {
		return errors.New("processes survived 100 kill rounds: " + string(bytes.TrimSpace(stderr)))
	}
	return nil
}

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
	var out, errb limitBuffer
	if _, err := stdcopy.StdCopy(&out, &errb, hj.Reader); err != nil {
		if ctx.Err() != nil {
			return -1, out.B, errb.B, ctx.Err()
		}
		return -1, out.B, errb.B, err
	}
	ins, err := api.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	for err == nil && ins.Running { // output ended; the process is on its way out
		select {
		case <-ctx.Done():
			return -1, out.B, errb.B, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
		ins, err = api.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	}
	if err != nil {
		return -1, out.B, errb.B, err
	}
	return ins.ExitCode, out.B, errb.B, nil
}

// limitBuffer keeps the first execchan.MaxStream bytes written to it.
type limitBuffer = execchan.LimitBuffer

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
