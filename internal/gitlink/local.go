package gitlink

import (
	"context"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/internal/outcap"
	"github.com/mu-org/mu-plugins/internal/proc"
	"github.com/mu-org/mu-plugins/protocol"
)

// The local side of link.fetch and link.push for a backend whose host is
// reached through an exec API (docker, k8s): the local git runs `git
// fetch|push ext::<plugin binary> <bridge sub-command> …`, and the bridge
// runs git-upload-pack or git-receive-pack on the host over an exec,
// demultiplexing its output so that git sees only protocol bytes.

// ExtService is the word of an ext:: command that git replaces with the
// service (git-upload-pack, git-receive-pack).
const ExtService = "%S"

// ExtURL is the ext:: remote that runs words (ext:: splits its command on
// spaces; "% " is a literal space and "%%" a literal %; ExtService stays).
func ExtURL(words ...string) string {
	esc := strings.NewReplacer("%", "%%", " ", "% ").Replace
	out := make([]string, len(words))
	for i, w := range words {
		if w == ExtService {
			out[i] = w
		} else {
			out[i] = esc(w)
		}
	}
	return "ext::" + strings.Join(out, " ")
}

// FetchArgs are git's arguments for link.fetch of url's HEAD into local.
func FetchArgs(local, url string) []string {
	return []string{"-C", local, "-c", "protocol.ext.allow=always", "fetch", "--no-tags", "--no-recurse-submodules", url, "HEAD"}
}

// PushArgs are git's arguments for link.push of rev to url (onto PushedRef).
func PushArgs(local, url, rev string) []string {
	return []string{"-C", local, "-c", "protocol.ext.allow=always", "push", "--no-verify", "--porcelain", url, Refspec(rev)}
}

// CheckPaths refuses (permanent) repository paths a bridge cannot carry.
func CheckPaths(local, remote string) error {
	switch {
	case local == "" || remote == "":
		return protocol.Errorf(protocol.Permanent, "the local and the remote repository paths are required")
	case strings.HasPrefix(remote, "-"):
		return protocol.Errorf(protocol.Permanent, "remote path %q starts with '-'", remote)
	case strings.ContainsAny(remote, "\n\x00") || strings.ContainsAny(local, "\n\x00"):
		return protocol.Errorf(protocol.Permanent, "a repository path cannot hold a newline or NUL")
	}
	if st, err := os.Stat(local); err != nil || !st.IsDir() {
		return protocol.Errorf(protocol.Permanent, "local repository %q is not a directory", local)
	}
	return nil
}

// RunLocal runs the local git with args through internal/proc (in the
// plugin's group, its whole tree killed on timeout), with env added to its
// environment (what points the bridge at the plugin's host). On timeout
// stopRemote kills the host side before the answer (exitCode null).
func RunLocal(ctx context.Context, timeout time.Duration, env map[string]string, stopRemote func(context.Context) error, args ...string) (protocol.ExecResult, error) {
	gctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true")
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	out, errb := outcap.New(outcap.MaxStream), outcap.New(outcap.MaxStream)
	cmd.Stdout, cmd.Stderr, cmd.Stdin = out, errb, nil
	res, err := proc.Run(gctx, cmd, proc.Options{KillLeftovers: true})
	if err != nil {
		return protocol.ExecResult{}, protocol.Wrap(protocol.Retryable, err, "running git")
	}
	if res.Stopped {
		if serr := stopRemote(ctx); serr != nil {
			return protocol.ExecResult{}, protocol.Wrap(protocol.UnknownOutcome, serr, "the timed-out git could not be proven stopped on the host")
		}
		if ctx.Err() != nil {
			return protocol.ExecResult{}, ctx.Err()
		}
		o, e, _ := outcap.Fit(out.Kept(), errb.Kept(), false, outcap.ReplyBudget)
		return protocol.ExecResult{ExitCode: nil, Stdout: o, Stderr: e, Partial: true}, nil
	}
	code := res.ExitCode
	ob, oDropped := out.Bytes()
	eb, eDropped := errb.Bytes()
	o, e, cut := outcap.Fit(ob, eb, false, outcap.ReplyBudget)
	return protocol.ExecResult{ExitCode: &code, Stdout: o, Stderr: e, Partial: cut || oDropped || eDropped}, nil
}

// Prepare is link.push's first step on a host reached by one-off execs:
// exec runs PrepareScript in the login directory (home is a script that
// runs its arguments there) within timeout. It answers the push itself
// (a result, or an error classified by execErr) when there is nothing more
// to do: the repo holds rev already, the preparation failed or timed out;
// ready says the push must run.
func Prepare(ctx context.Context, timeout time.Duration, p protocol.PushParams, home string,
	exec func(ctx context.Context, argv []string) (int, []byte, error), execErr func(error) error) (res protocol.ExecResult, ready bool, err error) {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	argv := []string{"/bin/sh", "-c", home, "sh", "/bin/sh", "-c", PrepareScript, "sh", p.RemoteRepo, p.Rev}
	code, stderr, err := exec(pctx, argv)
	switch {
	case err != nil && ctx.Err() != nil:
		return protocol.ExecResult{}, false, ctx.Err()
	case err != nil && pctx.Err() != nil:
		return protocol.ExecResult{ExitCode: nil, Stderr: "timed out preparing " + p.RemoteRepo}, false, nil
	case err != nil:
		return protocol.ExecResult{}, false, execErr(err)
	case code == PrepareHasRev:
		zero := 0
		return protocol.ExecResult{ExitCode: &zero}, false, nil
	case code != PrepareReady:
		out, errs, cut := outcap.Fit(nil, stderr, false, outcap.ReplyBudget)
		return protocol.ExecResult{ExitCode: &code, Stdout: out, Stderr: errs, Partial: cut}, false, nil
	}
	return protocol.ExecResult{}, true, nil
}
