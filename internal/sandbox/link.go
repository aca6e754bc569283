package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/internal/execchan"
	"github.com/mu-org/mu-plugins/internal/gitlink"
	"github.com/mu-org/mu-plugins/protocol"
)

// Exec serves link.exec over the host's pooled exec channels. On timeout
// the run's processes are killed on the host before the answer, with
// exitCode null.
func (h *Hosts) Exec(ctx context.Context, call *protocol.Call, p protocol.ExecParams) (protocol.ExecResult, error) {
	host, err := h.HostOf(ctx, p.Target)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	if len(p.Script) > MaxScriptBytes {
		return protocol.ExecResult{}, protocol.Errorf(protocol.Permanent, "script is %d bytes; maxScriptBytes is %d", len(p.Script), MaxScriptBytes)
	}
	if strings.IndexByte(p.Script, 0) >= 0 || strings.ContainsAny(p.Cwd, "\x00\n") {
		return protocol.ExecResult{}, protocol.Errorf(protocol.Permanent, "a script cannot hold a NUL byte, nor a cwd a NUL or a newline")
	}
	cwd := p.Cwd
	if cwd == "" {
		cwd = "."
	}
	return h.Pool(host).Script(ctx, p.Script, cwd, protocol.RunTimeout(p.TimeoutMs))
}

// StopRun kills every process marked mark on host from a second exec
// (neither provider's exec API has a kill) and returns nil only once none
// is left.
func (h *Hosts) StopRun(ctx context.Context, host, mark string) error {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	code, stderr, err := h.p.ExecOnce(kctx, host, []string{"/bin/sh", "-c", execchan.StopScript, "sh", mark})
	if err != nil {
		return err
	}
	if code != 0 {
		return errors.New("processes survived 100 kill rounds: " + string(bytes.TrimSpace(stderr)))
	}
	return nil
}

// Commits move with git's smart protocol over exec streams: the local git
// runs `git fetch|push ext::<this binary> git-bridge …` (gitlink.RunLocal),
// and the bridge (Bridge) runs git-upload-pack or git-receive-pack on the
// host over one exec.

// BridgeCommand is the sub-command git's ext:: transport runs.
const BridgeCommand = "git-bridge"

// Fetch serves link.fetch: afterwards localRepo's FETCH_HEAD names
// remoteCwd's HEAD.
func (h *Hosts) Fetch(ctx context.Context, call *protocol.Call, p protocol.FetchParams) (protocol.ExecResult, error) {
	host, err := h.HostOf(ctx, p.Target)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	if err := gitlink.CheckPaths(p.LocalRepo, p.RemoteCwd); err != nil {
		return protocol.ExecResult{}, err
	}
	mark := execchan.NewMark()
	return h.runGit(ctx, host, mark, protocol.RunTimeout(p.TimeoutMs), gitlink.FetchArgs(p.LocalRepo, h.extURL(host, mark, p.RemoteCwd))...)
}

// Push serves link.push: afterwards remoteRepo (created if absent) holds
// rev. A repo that already holds it succeeds untouched.
func (h *Hosts) Push(ctx context.Context, call *protocol.Call, p protocol.PushParams) (protocol.ExecResult, error) {
	host, err := h.HostOf(ctx, p.Target)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	if err := gitlink.CheckRev(p.Rev); err != nil {
		return protocol.ExecResult{}, err
	}
	if err := gitlink.CheckPaths(p.LocalRepo, p.RemoteRepo); err != nil {
		return protocol.ExecResult{}, err
	}
	timeout := protocol.RunTimeout(p.TimeoutMs)
	start := time.Now()
	res, ready, err := gitlink.Prepare(ctx, timeout, p, execchan.HomeScript, func(ctx context.Context, argv []string) (int, []byte, error) {
		return h.p.ExecOnce(ctx, host, argv)
	}, func(err error) error { return h.p.APIError(err, "preparing the remote repository") })
	switch {
	case err != nil:
		return protocol.ExecResult{}, err
	case !ready:
		return res, nil
	}
	mark := execchan.NewMark()
	return h.runGit(ctx, host, mark, timeout-time.Since(start), gitlink.PushArgs(p.LocalRepo, h.extURL(host, mark, p.RemoteRepo), p.Rev)...)
}

// extURL is the ext:: remote for path on host.
func (h *Hosts) extURL(host, mark, path string) string {
	return gitlink.ExtURL(h.self, BridgeCommand, host, mark, gitlink.ExtService, path)
}

// runGit runs the local git (gitlink.RunLocal) with the bridge pinned to
// this provider's hosts; on timeout the host side is killed too before the
// answer.
func (h *Hosts) runGit(ctx context.Context, host, mark string, timeout time.Duration, args ...string) (protocol.ExecResult, error) {
	pin, unpin, err := h.p.BridgeEnv(ctx)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	defer unpin()
	return gitlink.RunLocal(ctx, timeout, pin, func(ctx context.Context) error { return h.StopRun(ctx, host, mark) }, args...)
}

// Bridge is the git-bridge sub-command: `git-bridge HOST MARK SERVICE
// PATH` runs SERVICE (git-upload-pack or git-receive-pack) on PATH on
// HOST, relaying stdin to it and its stdout and stderr back, and exits
// with its exit code. MARK marks its processes (execchan.RunVar) so that a
// timed-out transfer can be killed on the host. hostArg names HOST in the
// usage ("CONTAINER", "POD"); run execs argv on host with env set (the
// provider's own exec, on this process's stdin, stdout and stderr).
func Bridge(ctx context.Context, args []string, hostArg string, run func(ctx context.Context, host string, env, argv []string) (int, error)) int {
	if len(args) != 4 {
		fmt.Fprintf(os.Stderr, "usage: %s %s MARK SERVICE PATH (run by git's ext:: transport)\n", BridgeCommand, hostArg)
		return 2
	}
	host, mark, service, path := args[0], args[1], args[2], args[3]
	if service != "git-upload-pack" && service != "git-receive-pack" {
		fmt.Fprintf(os.Stderr, "git-bridge: service %q is not git-upload-pack or git-receive-pack\n", service)
		return 2
	}
	env := []string{execchan.RunVar + "=" + mark}
	if gp := os.Getenv("GIT_PROTOCOL"); gp != "" {
		env = append(env, "GIT_PROTOCOL="+gp)
	}
	argv := []string{"/bin/sh", "-c", execchan.HomeScript, "sh", service, "--", path}
	code, err := run(ctx, host, env, argv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "git-bridge:", err)
		return 128
	}
	return code
}
