package ssh

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/internal/gitlink"
	"github.com/mu-org/mu-plugins/internal/outcap"
	"github.com/mu-org/mu-plugins/internal/proc"
	"github.com/mu-org/mu-plugins/internal/sshclient"
	"github.com/mu-org/mu-plugins/protocol"
)

// shimHost is the host name git sees in the URL; the shim ignores it and
// uses the connection the call registered.
const shimHost = "mu-ssh-link"

// fetch serves link.fetch: `git fetch` of remoteCwd's HEAD into localRepo,
// by git's own protocol (v2) over the plugin's connection.
func (b *Backend) fetch(ctx context.Context, call *protocol.Call, p protocol.FetchParams) (protocol.ExecResult, error) {
	if err := localRepoOK(p.LocalRepo); err != nil {
		return protocol.ExecResult{}, err
	}
	if p.RemoteCwd == "" {
		return protocol.ExecResult{}, protocol.Errorf(protocol.Permanent, "link.fetch: remoteCwd is required")
	}
	timeout := protocol.RunTimeout(p.TimeoutMs)
	// No auto maintenance: a `git gc --auto` detached from a collect would
	// be killed with the run's leftovers, possibly holding gc.pid.
	return b.git(ctx, p.Target.Host.Name, timeout, p.LocalRepo,
		"-c", "protocol.version=2", "-c", "maintenance.auto=false", "-c", "gc.auto=0",
		"fetch", "--no-tags", shimURL(p.RemoteCwd), "HEAD")
}

// push serves link.push: rev lands on gitlink.PushedRef(rev) in remoteRepo
// (made a repository when it is none), never on a checked-out branch; a
// repo that already holds rev is left untouched.
func (b *Backend) push(ctx context.Context, call *protocol.Call, p protocol.PushParams) (protocol.ExecResult, error) {
	if err := gitlink.CheckRev(p.Rev); err != nil {
		return protocol.ExecResult{}, err
	}
	if err := localRepoOK(p.LocalRepo); err != nil {
		return protocol.ExecResult{}, err
	}
	if p.RemoteRepo == "" {
		return protocol.ExecResult{}, protocol.Errorf(protocol.Permanent, "link.push: remoteRepo is required")
	}
	deadline := time.Now().Add(protocol.RunTimeout(p.TimeoutMs))
	c, err := b.pool.get(ctx, p.Target.Host.Name)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	out, errb := outcap.New(outcap.ReplyBudget), outcap.New(outcap.ReplyBudget)
	// The preparation runs under the wrapper like any script (on stdin, the
	// repo and the rev as its arguments), in the login directory.
	r, err := b.start(ctx, c, runSpec{
		until: deadline, cwd: ".", args: []string{p.RemoteRepo, p.Rev},
		stdin: scriptStdin(gitlink.PrepareScript), stdout: out, stderr: errb,
	})
	if err != nil {
		return protocol.ExecResult{}, err
	}
	exit, err := b.outcome(ctx, r)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	switch {
	case exit != nil && *exit == gitlink.PrepareHasRev:
		zero := 0
		return protocol.ExecResult{ExitCode: &zero}, nil
	case exit == nil || *exit != gitlink.PrepareReady:
		return result(exit, out, errb), nil
	}
	return b.git(ctx, p.Target.Host.Name, time.Until(deadline), p.LocalRepo,
		"-c", "protocol.version=2", "push", "--quiet", shimURL(p.RemoteRepo), gitlink.Refspec(p.Rev))
}

// git runs local git with the shim as its ssh, through internal/proc so its
// whole tree dies on timeout.
func (b *Backend) git(ctx context.Context, dest string, timeout time.Duration, repo string, args ...string) (protocol.ExecResult, error) {
	if timeout <= 0 {
		return protocol.ExecResult{ExitCode: nil}, nil
	}
	c, err := b.pool.get(ctx, dest)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	sh, err := b.ensureShim()
	if err != nil {
		return protocol.ExecResult{}, protocol.NotStarted(err, "cannot start the git transport")
	}
	deadline := time.Now().Add(timeout)
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	token, done := sh.register(runCtx, c, deadline)
	defer done()
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	cmd.Env = append(gitEnv(),
		"GIT_SSH_COMMAND="+shQuote(b.cfg.ShimExe)+" git-ssh",
		"GIT_SSH_VARIANT=ssh",
		"GIT_TERMINAL_PROMPT=0",
		envShimSock+"="+sh.sock,
		envShimToken+"="+token,
	)
	out, errb := outcap.New(outcap.ReplyBudget), outcap.New(outcap.ReplyBudget)
	cmd.Stdout, cmd.Stderr = out, errb
	// No KillLeftovers scan after a normal exit (it reads every process's
	// environment, ~8 ms): git waits for its shim and its own helpers, and
	// auto maintenance is off. A stopped run's whole tree is still killed,
	// and whatever else stays in the plugin's group, which mu empties.
	res, err := proc.Run(runCtx, cmd, proc.Options{})
	if err != nil {
		return protocol.ExecResult{}, protocol.NotStarted(err, "cannot run git")
	}
	if cutShort(res, runCtx.Err(), deadline, time.Now()) {
		if ctx.Err() != nil {
			return protocol.ExecResult{}, fmt.Errorf("the call ended while git ran; it was stopped: %w", ctx.Err()) // unknown-outcome: protocol.ToWire
		}
		return result(nil, out, errb), nil
	}
	code := res.ExitCode
	return result(&code, out, errb), nil
}

// cutShort tells a git run that its end cut short: proc.Run killed it
// (Stopped), or it failed once its context had ended (runErr) or its
// deadline had passed. The shim stops the remote git and closes git's
// transport at that same end, so git may exit on its own (128, "the remote
// end hung up") before proc.Run kills it: that run was cut short too, and
// answers exitCode null like any timed-out run, never git's exit code.
func cutShort(res proc.Result, runErr error, deadline, now time.Time) bool {
	return res.Stopped || (res.ExitCode != 0 && (runErr != nil || !now.Before(deadline)))
}

// gitEnv is the plugin's environment minus what would redirect git's
// transport or config away from the shim.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSH_VARIANT", "GIT_DIR", "GIT_WORK_TREE", "GIT_PROTOCOL", envShimSock, envShimToken:
			continue
		}
		env = append(env, kv)
	}
	return env
}

// shimURL is git's scp-like URL for path on the shim host ("." and relative
// paths are relative to the login directory, as with ssh).
func shimURL(path string) string {
	if path == "" || path == "." {
		path = "."
	}
	return shimHost + ":" + path
}

func localRepoOK(repo string) error {
	if repo == "" || !filepath.IsAbs(repo) {
		return protocol.Errorf(protocol.Permanent, "localRepo %q must be an absolute path", sshclient.SafeName(repo))
	}
	if st, err := os.Stat(repo); err != nil || !st.IsDir() {
		return protocol.Errorf(protocol.Permanent, "localRepo %q is not a directory", sshclient.SafeName(repo))
	}
	return nil
}
