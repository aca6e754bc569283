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

	"github.com/mu-org/mu-plugins/internal/outcap"
	"github.com/mu-org/mu-plugins/protocol"
)

// killWait bounds the wait for a killed run's end marker, once the kill was
// proven: the answer must come inside mu's grace (5 s) after timeoutMs.
const killWait = 3 * time.Second

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
	code, r, err := b.do(ctx, ctr, timeout, func(s *session) (*run, error) { return s.start(script, cwd) })
	if err != nil {
		return nil, err
	}
	return result(code, r), nil
}

// do sends one request (send) on a pooled exec channel of ctr and waits for
// its end. On timeout or cancel it kills the run's processes inside the
// container and returns a nil code only once none is left (ctx's error when
// ctx ended).
func (b *Backend) do(ctx context.Context, ctr string, timeout time.Duration, send func(*session) (*run, error)) (*int, *run, error) {
	pl := b.pool(ctr)
	var s *session
	var r *run
	for attempt := 0; ; attempt++ {
		var err error
		s, err = pl.get(ctx)
		if err != nil {
			return nil, nil, engineErr(err, "opening an exec channel in container "+short(ctr))
		}
		if r, err = send(s); err == nil {
			break
		}
		pl.put(s, false) // nothing ran: the request never fully reached the shell
		if attempt == 1 {
			return nil, nil, protocol.Wrap(protocol.Retryable, err, "writing to the exec channel")
		}
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-r.done:
		pl.put(s, true)
		code, err := r.exitCode()
		if err != nil {
			return nil, nil, protocol.Wrap(protocol.UnknownOutcome, err, "reading the exit code")
		}
		return &code, r, nil
	case <-s.dead:
		b.stopRun(ctx, ctr, r.mark)
		pl.put(s, false)
		return nil, nil, protocol.Wrap(protocol.UnknownOutcome, s.err, "the exec channel broke during the run")
	case <-timer.C:
	case <-ctx.Done():
	}
	select {
	case <-r.done: // it ended as the timer fired: nothing to stop
		if ctx.Err() == nil {
			pl.put(s, true)
			if code, err := r.exitCode(); err == nil {
				return &code, r, nil
			}
			return nil, nil, protocol.Errorf(protocol.UnknownOutcome, "reading the exit code")
		}
	default:
	}
	stopErr := b.stopRun(ctx, ctr, r.mark)
	wait := time.NewTimer(killWait)
	defer wait.Stop()
	select {
	case <-r.done:
		pl.put(s, true)
	case <-s.dead:
		pl.put(s, false)
	case <-wait.C:
		s.close()
		<-s.dead // the reader is gone: the collectors are ours
		pl.put(s, false)
	}
	if stopErr != nil {
		return nil, nil, protocol.Wrap(protocol.UnknownOutcome, stopErr, "the timed-out script could not be proven stopped")
	}
	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	return nil, r, nil
}

func result(code *int, r *run) *protocol.ExecResult {
	out, errs, cut := outcap.Fit(r.out.kept, r.err.kept, false, outcap.ReplyBudget)
	return &protocol.ExecResult{ExitCode: code, Stdout: out, Stderr: errs, Partial: cut || r.out.cut() || r.err.cut()}
}

// stopRun kills every process marked mark inside ctr from a second exec (the
// Engine has no exec-kill API) and returns nil only once none is left.
func (b *Backend) stopRun(ctx context.Context, ctr, mark string) error {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	code, _, stderr, err := execOnce(kctx, b.api, ctr, []string{"/bin/sh", "-c", stopScript, "sh", mark}, nil, nil)
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
			return -1, out.b, errb.b, ctx.Err()
		}
		return -1, out.b, errb.b, err
	}
	ins, err := api.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	for err == nil && ins.Running { // output ended; the process is on its way out
		select {
		case <-ctx.Done():
			return -1, out.b, errb.b, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
		ins, err = api.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	}
	if err != nil {
		return -1, out.b, errb.b, err
	}
	return ins.ExitCode, out.b, errb.b, nil
}

// limitBuffer keeps the first maxStream bytes written to it.
type limitBuffer struct{ b []byte }

func (l *limitBuffer) Write(p []byte) (int, error) {
	if room := maxStream - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
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
