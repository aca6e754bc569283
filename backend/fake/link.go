package fake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/mu-org/mu-plugins/internal/gitlink"
	"github.com/mu-org/mu-plugins/internal/outcap"
	"github.com/mu-org/mu-plugins/internal/proc"
	"github.com/mu-org/mu-plugins/protocol"
)

var hostNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,127}$`)

// site is where a call runs: a host's login directory, and the time its
// host is gone (epoch ms; 0 for none), which ends any run still going.
type site struct {
	name   string
	handle string // a provider host's handle: its runs carry it (HostVar)
	home   string
	until  int64
}

// HostVar is in the environment of every run on a provider host, naming
// the host's directory (its handle is unique in one world only; the
// directory, under the world's root, in every world): host.release finds
// the host's runs by it, in this plugin process or another, and ends them
// before it answers.
const HostVar = "MU_FAKE_HOST"

// hostDir is a host's login directory, created on first use: the host's
// handle for a provider host, else its name, under ROOT/hosts. A provider
// host that is gone (released, or past its ttl) refuses.
func (f *Fake) hostDir(ctx context.Context, h protocol.HostRef) (site, error) {
	name := h.Name
	var until int64
	if h.Handle != "" {
		name = h.Handle
		var gone string
		err := f.do(ctx, false, func(w *World) error {
			hr := w.hostByHandle(h.Handle)
			switch {
			case hr == nil:
				// host.status reads it gone: nothing runs on it.
				gone = "is not in this fake's world (without --state a world lasts one invocation)"
			case hr.State == stateReleased:
				gone = "was released"
			case hr.State == stateGone:
				gone = "is gone: its ttl ran out"
			case hr.Result.DeadlineAt != nil:
				until = *hr.Result.DeadlineAt
			}
			return nil
		})
		if err != nil {
			return site{}, protocol.Wrap(protocol.Retryable, err, "reading the fake's world")
		}
		if gone != "" {
			return site{}, protocol.Errorf(protocol.Permanent, "host %s %s", h.Handle, gone)
		}
	}
	if !hostNameRe.MatchString(name) || strings.Contains(name, "..") {
		return site{}, protocol.Errorf(protocol.Permanent, "host name %q: use letters, digits and _.@:- (at most 128)", name)
	}
	dir := f.hostPath(name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return site{}, protocol.Wrap(protocol.Retryable, err, "creating the host's directory")
	}
	return site{name: name, handle: h.Handle, home: dir, until: until}, nil
}

// onHost resolves a path on the host: relative to its login directory.
func onHost(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// cleanEnv is a script's whole environment, built from scratch: nothing of
// the plugin's own (MU_PLUGIN_CANARY included) reaches a script.
func cleanEnv(home, pwd string) []string {
	name := "root"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return []string{
		"HOME=" + home, "PWD=" + pwd, "USER=" + name, "LOGNAME=" + name, "SHELL=/bin/sh",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8", "TMPDIR=/tmp",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
	}
}

// step is one local process of a link call.
type step struct {
	argv []string
	dir  string
}

// runSteps runs steps in order until one fails, within one timeout, with
// output kept, capped and fitted to a reply. A timeout kills the whole tree
// of the step and answers exitCode null; the call's own end (its deadline,
// $/cancel, EOF) is an error.
//
// A run on a host with a ttl ends when the host does: nothing runs on a
// host that is gone. Such a run answers unknown-outcome (it may have done
// part of its work).
func (f *Fake) runSteps(ctx context.Context, at site, timeoutMs int64, steps []step) (protocol.ExecResult, error) {
	hctx := ctx
	if at.until > 0 {
		var cancelHost context.CancelFunc
		hctx, cancelHost = context.WithTimeout(ctx, time.Duration(at.until-f.now())*time.Millisecond)
		defer cancelHost()
	}
	tctx, cancel := context.WithTimeout(hctx, protocol.RunTimeout(timeoutMs))
	defer cancel()
	stdout := outcap.New(protocol.MaxLine)
	stderr := outcap.New(protocol.MaxLine)
	var res protocol.ExecResult
	for _, s := range steps {
		code, timedOut, err := runOne(tctx, at, s, stdout, stderr)
		if err != nil {
			return res, protocol.Wrap(protocol.Retryable, err, "starting "+s.argv[0])
		}
		if timedOut {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			if hctx.Err() != nil {
				return res, protocol.Errorf(protocol.UnknownOutcome, "host %s is gone: its ttl ran out during the run, which was killed", at.name)
			}
			res.ExitCode = nil
			break
		}
		if code >= 128 && f.releasedNow(ctx, at) {
			return res, protocol.Errorf(protocol.UnknownOutcome, "host %s was released during the run, which was killed", at.name)
		}
		res.ExitCode = &code
		if code != 0 {
			break
		}
	}
	ob, oover := stdout.Bytes()
	eb, eover := stderr.Bytes()
	res.Stdout, res.Stderr, res.Partial = outcap.Fit(ob, eb, oover || eover, outcap.ReplyBudget)
	return res, nil
}

// releasedNow tells whether a provider host was released (a run killed by
// a signal may have been killed by its release, in this process or another).
func (f *Fake) releasedNow(ctx context.Context, at site) bool {
	if at.handle == "" {
		return false
	}
	released := false
	_ = f.do(ctx, false, func(w *World) error {
		hr := w.hostByHandle(at.handle)
		released = hr == nil || hr.State == stateReleased
		return nil
	})
	return released
}

func runOne(ctx context.Context, at site, s step, stdout, stderr *outcap.Capture) (code int, timedOut bool, err error) {
	if st, err := os.Stat(s.dir); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "mu-plugin-fake: cd %s: no such directory\n", s.dir)
		return 2, false, nil
	}
	argv := s.argv
	if ctxFault(ctx, FaultSetsidRuns) {
		argv = append([]string{"setsid"}, argv...) // the fault: the run leaves the plugin's group
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.dir
	cmd.Env = cleanEnv(at.home, s.dir)
	if at.handle != "" {
		cmd.Env = append(cmd.Env, HostVar+"="+at.home)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	r, err := proc.Run(ctx, cmd, proc.Options{KillLeftovers: true})
	if err != nil {
		return 0, false, err
	}
	if r.Stopped {
		return 0, true, nil
	}
	if ps := cmd.ProcessState; ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), false, nil
		}
	}
	return r.ExitCode, false, nil
}

func (f *Fake) linkExec(ctx context.Context, call *protocol.Call, p protocol.ExecParams) (protocol.ExecResult, error) {
	if len(p.Script) > MaxScriptBytes {
		return protocol.ExecResult{}, protocol.Errorf(protocol.Permanent, "script of %d bytes exceeds maxScriptBytes %d", len(p.Script), MaxScriptBytes)
	}
	if strings.IndexByte(p.Script, 0) >= 0 {
		return protocol.ExecResult{}, protocol.Errorf(protocol.Permanent, "script holds a NUL byte")
	}
	at, err := f.hostDir(ctx, p.Target.Host)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	cwd := p.Cwd
	if cwd == "" {
		cwd = "."
	}
	run := []step{{argv: []string{"/bin/sh", "-c", p.Script}, dir: onHost(at.home, cwd)}}
	if ctxFault(ctx, FaultEarlyTimeout) && strings.Contains(p.Script, "sleep") {
		// The fault: timed out after half a second, whatever timeoutMs says
		// and however the script ended.
		res, err := f.runSteps(ctx, at, earlyTimeout.Milliseconds(), run)
		res.ExitCode = nil
		return res, err
	}
	return f.runSteps(ctx, at, p.TimeoutMs, run)
}

func git(args ...string) []string {
	return append([]string{"git", "-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null"}, args...)
}

// gitSite is the host's site for a fetch or a push from localRepo, which
// must be an absolute path.
func (f *Fake) gitSite(ctx context.Context, h protocol.HostRef, localRepo string) (site, error) {
	if !filepath.IsAbs(localRepo) {
		return site{}, protocol.Errorf(protocol.Permanent, "localRepo must be an absolute path")
	}
	return f.hostDir(ctx, h)
}

func (f *Fake) linkFetch(ctx context.Context, call *protocol.Call, p protocol.FetchParams) (protocol.ExecResult, error) {
	at, err := f.gitSite(ctx, p.Target.Host, p.LocalRepo)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	remote := onHost(at.home, p.RemoteCwd)
	// No refspec but HEAD: FETCH_HEAD names the remote's HEAD, and nothing
	// else in localRepo changes, so a re-run is the same fetch.
	return f.runSteps(ctx, at, p.TimeoutMs, []step{{argv: git("fetch", "--quiet", "--no-tags", remote, "HEAD"), dir: p.LocalRepo}})
}

func (f *Fake) linkPush(ctx context.Context, call *protocol.Call, p protocol.PushParams) (protocol.ExecResult, error) {
	if err := gitlink.CheckRev(p.Rev); err != nil {
		return protocol.ExecResult{}, err
	}
	at, err := f.gitSite(ctx, p.Target.Host, p.LocalRepo)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	remote := onHost(at.home, p.RemoteRepo)
	if err := os.MkdirAll(remote, 0o700); err != nil {
		return protocol.ExecResult{}, protocol.Wrap(protocol.Retryable, err, "creating the remote repo's directory")
	}
	if !isRepo(remote) {
		res, err := f.runSteps(ctx, at, p.TimeoutMs, []step{{argv: git("init", "--quiet", remote), dir: at.home}})
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			return res, err
		}
	}
	// Idempotent: a repo that already holds rev is left untouched.
	held, err := f.runSteps(ctx, at, p.TimeoutMs, []step{{argv: git("cat-file", "-e", p.Rev+"^{commit}"), dir: remote}})
	if err != nil {
		return protocol.ExecResult{}, err
	}
	if held.ExitCode != nil && *held.ExitCode == 0 {
		return protocol.ExecResult{ExitCode: held.ExitCode}, nil
	}
	// A ref no worktree has checked out, so the push is never refused.
	return f.runSteps(ctx, at, p.TimeoutMs, []step{{argv: git("push", "--quiet", remote, gitlink.Refspec(p.Rev)), dir: p.LocalRepo}})
}

func isRepo(dir string) bool {
	if st, err := os.Stat(filepath.Join(dir, ".git")); err == nil && st.IsDir() {
		return true
	}
	_, err := os.Stat(filepath.Join(dir, "HEAD"))
	_, err2 := os.Stat(filepath.Join(dir, "objects"))
	return err == nil && err2 == nil
}

func (f *Fake) linkCheckSteps(ctx context.Context, call *protocol.Call, p protocol.CheckStepsParams) ([]protocol.Step, error) {
	s := gitlink.NewSteps()
	if p.Phase != protocol.PhaseReach {
		return s.List(), nil
	}
	at, err := f.hostDir(ctx, p.Target.Host)
	if err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) && pe.Kind == protocol.Permanent {
			s.Fail("reach", pe.Message)
			return s.List(), nil
		}
		return nil, err
	}
	s.Pass("reach", "login directory "+at.home)
	if p.Root != "" {
		if st, err := os.Stat(onHost(at.home, p.Root)); err != nil || !st.IsDir() {
			s.Warn("root", "root "+p.Root+" does not exist yet")
		} else {
			s.Pass("root", "root "+p.Root+" is a directory")
		}
	}
	return s.List(), nil
}
