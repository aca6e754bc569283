package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/mu-org/mu-plugins/internal/execchan"
	"github.com/mu-org/mu-plugins/internal/gitlink"
	"github.com/mu-org/mu-plugins/protocol"
)

// Commits move with git's smart protocol, not tar copies: the local git runs
// `git fetch|push ext::<this binary> git-bridge …`, and the bridge runs
// git-upload-pack or git-receive-pack in the container over an exec,
// demultiplexing the exec's stream so git sees only protocol bytes.

// BridgeCommand is the sub-command git's ext:: transport runs.
const BridgeCommand = "git-bridge"

// fetch serves link.fetch: afterwards localRepo's FETCH_HEAD names
// remoteCwd's HEAD.
func (b *Backend) fetch(ctx context.Context, call *protocol.Call, p protocol.FetchParams) (any, error) {
	ctr, err := b.hostOf(ctx, p.Target)
	if err != nil {
		return nil, err
	}
	if err := gitlink.CheckPaths(p.LocalRepo, p.RemoteCwd); err != nil {
		return nil, err
	}
	mark := execchan.NewMark()
	return b.runGit(ctx, ctr, mark, protocol.RunTimeout(p.TimeoutMs), gitlink.FetchArgs(p.LocalRepo, b.extURL(ctr, mark, p.RemoteCwd))...)
}

// push serves link.push: afterwards remoteRepo (created if absent) holds
// rev. A repo that already holds it succeeds untouched.
func (b *Backend) push(ctx context.Context, call *protocol.Call, p protocol.PushParams) (any, error) {
	ctr, err := b.hostOf(ctx, p.Target)
	if err != nil {
		return nil, err
	}
	if err := gitlink.CheckRev(p.Rev); err != nil {
		return nil, err
	}
	if err := gitlink.CheckPaths(p.LocalRepo, p.RemoteRepo); err != nil {
		return nil, err
	}
	timeout := protocol.RunTimeout(p.TimeoutMs)
	start := time.Now()
	res, ready, err := gitlink.Prepare(ctx, timeout, p, execchan.HomeScript, func(ctx context.Context, argv []string) (int, []byte, error) {
		code, _, stderr, err := execOnce(ctx, b.api, ctr, argv, nil, nil)
		return code, stderr, err
	}, func(err error) error { return engineErr(err, "preparing the remote repository") })
	switch {
	case err != nil:
		return nil, err
	case !ready:
		return res, nil
	}
	mark := execchan.NewMark()
	return b.runGit(ctx, ctr, mark, timeout-time.Since(start), gitlink.PushArgs(p.LocalRepo, b.extURL(ctr, mark, p.RemoteRepo), p.Rev)...)
}

// extURL is the ext:: remote for path in ctr.
func (b *Backend) extURL(ctr, mark, path string) string {
	return gitlink.ExtURL(b.cfg.Self, BridgeCommand, ctr, mark, gitlink.ExtService, path)
}

// runGit runs the local git (gitlink.RunLocal) with the bridge pinned to
// this Engine; on timeout the container side is killed too before the
// answer.
func (b *Backend) runGit(ctx context.Context, ctr, mark string, timeout time.Duration, args ...string) (any, error) {
	pin, unpin, err := b.bridgePin(ctx) // the bridge git runs addresses this Engine
	if err != nil {
		return nil, err
	}
	defer unpin()
	return gitlink.RunLocal(ctx, timeout, pin, func(ctx context.Context) error { return b.stopRun(ctx, ctr, mark) }, args...)
}

// Bridge is the git-bridge sub-command: `git-bridge CONTAINER MARK SERVICE
// PATH` runs SERVICE (git-upload-pack or git-receive-pack) on PATH in
// CONTAINER, relaying stdin to it and its demultiplexed stdout and stderr
// back, and exits with its exit code. MARK marks its processes so that a
// timed-out transfer can be killed inside the container.
func Bridge(ctx context.Context, args []string) int {
	if len(args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: git-bridge CONTAINER MARK SERVICE PATH (run by git's ext:: transport)")
		return 2
	}
	ctr, mark, service, path := args[0], args[1], args[2], args[3]
	if service != "git-upload-pack" && service != "git-receive-pack" {
		fmt.Fprintf(os.Stderr, "git-bridge: service %q is not git-upload-pack or git-receive-pack\n", service)
		return 2
	}
	api, err := NewClient()
	if err != nil {
		fmt.Fprintln(os.Stderr, "git-bridge:", err)
		return 128
	}
	defer api.Close()
	env := []string{execchan.RunVar + "=" + mark}
	if gp := os.Getenv("GIT_PROTOCOL"); gp != "" {
		env = append(env, "GIT_PROTOCOL="+gp)
	}
	argv := []string{"/bin/sh", "-c", execchan.HomeScript, "sh", service, "--", path}
	code, err := bridge(ctx, api, ctr, argv, env, os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "git-bridge:", err)
		return 128
	}
	return code
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
