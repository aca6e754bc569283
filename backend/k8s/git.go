package k8s

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/mu-org/mu-plugins/internal/execchan"
	"github.com/mu-org/mu-plugins/internal/gitlink"
	"github.com/mu-org/mu-plugins/protocol"
)

// Commits move with git's smart protocol over exec streams: the local git
// runs `git fetch|push ext::<this binary> git-bridge …` (gitlink.RunLocal),
// and the bridge runs git-upload-pack or git-receive-pack in the pod over
// one pods/exec, its stdout and stderr on separate streams.

// BridgeCommand is the sub-command git's ext:: transport runs.
const BridgeCommand = "git-bridge"

// fetch serves link.fetch: afterwards localRepo's FETCH_HEAD names
// remoteCwd's HEAD.
func (b *Backend) fetch(ctx context.Context, call *protocol.Call, p protocol.FetchParams) (any, error) {
	pod, err := b.hostOf(ctx, p.Target)
	if err != nil {
		return nil, err
	}
	if err := gitlink.CheckPaths(p.LocalRepo, p.RemoteCwd); err != nil {
		return nil, err
	}
	mark := execchan.NewMark()
	return b.runGit(ctx, pod, mark, protocol.RunTimeout(p.TimeoutMs), gitlink.FetchArgs(p.LocalRepo, b.extURL(pod, mark, p.RemoteCwd))...)
}

// push serves link.push: afterwards remoteRepo (created if absent) holds
// rev. A repo that already holds it succeeds untouched.
func (b *Backend) push(ctx context.Context, call *protocol.Call, p protocol.PushParams) (any, error) {
	pod, err := b.hostOf(ctx, p.Target)
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
		code, _, stderr, err := b.execOnce(ctx, pod, argv, nil)
		return code, stderr, err
	}, func(err error) error { return apiErr(err, "preparing the remote repository") })
	switch {
	case err != nil:
		return nil, err
	case !ready:
		return res, nil
	}
	mark := execchan.NewMark()
	return b.runGit(ctx, pod, mark, timeout-time.Since(start), gitlink.PushArgs(p.LocalRepo, b.extURL(pod, mark, p.RemoteRepo), p.Rev)...)
}

func (b *Backend) extURL(pod, mark, path string) string {
	return gitlink.ExtURL(b.cfg.Self, BridgeCommand, pod, mark, gitlink.ExtService, path)
}

// runGit runs the local git with the bridge pinned to this cluster and
// namespace; on timeout the pod side is killed too before the answer.
func (b *Backend) runGit(ctx context.Context, pod, mark string, timeout time.Duration, args ...string) (any, error) {
	return gitlink.RunLocal(ctx, timeout, b.cfg.Target.Env(), func(ctx context.Context) error { return b.stopRun(ctx, pod, mark) }, args...)
}

// Bridge is the git-bridge sub-command: `git-bridge POD MARK SERVICE PATH`
// runs SERVICE (git-upload-pack or git-receive-pack) on PATH in POD,
// relaying stdin to it and its stdout and stderr back, and exits with its
// exit code. MARK marks its processes (execchan.RunVar) so that a
// timed-out transfer can be killed in the pod.
func Bridge(ctx context.Context, args []string) int {
	if len(args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: git-bridge POD MARK SERVICE PATH (run by git's ext:: transport)")
		return 2
	}
	pod, mark, service, path := args[0], args[1], args[2], args[3]
	if service != "git-upload-pack" && service != "git-receive-pack" {
		fmt.Fprintf(os.Stderr, "git-bridge: service %q is not git-upload-pack or git-receive-pack\n", service)
		return 2
	}
	b, err := subBackend()
	if err != nil {
		fmt.Fprintln(os.Stderr, "git-bridge:", err)
		return 128
	}
	// pods/exec sets no environment: env(1) does, then the login directory.
	argv := []string{"env", execchan.RunVar + "=" + mark}
	if gp := os.Getenv("GIT_PROTOCOL"); gp != "" {
		argv = append(argv, "GIT_PROTOCOL="+gp)
	}
	argv = append(argv, "/bin/sh", "-c", execchan.HomeScript, "sh", service, "--", path)
	ex, err := executor(b.cfg.Target.REST, b.cs.CoreV1().RESTClient(), b.ns, pod, argv, true)
	if err == nil {
		code, _, _, serr := exitOf(ex.StreamWithContext(ctx, streamStdio()), nil, nil)
		if serr == nil {
			return code
		}
		err = serr
	}
	fmt.Fprintln(os.Stderr, "git-bridge:", err)
	return 128
}
