package contract

import (
	"bytes"
	"context"
	"os/exec"
	"strings"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// hostTarget names the host given with --host (a link profile's host).
func (t *T) hostTarget() protocol.Target {
	return protocol.Target{Host: protocol.HostRef{Name: t.s.opts.Host}}
}

// linkTarget is the host a link, job or channel check runs on: for a
// provider (a plugin that declares host) a host it acquires first, as mu
// does, released when the check ends; else the --host profile.
func (t *T) linkTarget(p *caller.Plugin) protocol.Target {
	d := t.Decl()
	if d.Seams.Host == nil {
		return t.hostTarget()
	}
	key := t.Unique("host")
	res, err := caller.Invoke(t.Ctx(), p, protocol.MethodHostAcquire, t.acquireParams(key))
	if err != nil {
		t.Failf("host.acquire (to have a host to run on): %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), caller.DefaultReadTimeout)
		defer cancel()
		_, _ = p.Call(ctx, protocol.MethodHostRelease.Name, protocol.KeyParams{Base: protocol.Base{Target: t.hostTarget()}, Key: key}, 0)
	})
	return protocol.Target{Host: protocol.HostRef{Name: t.s.opts.Host, Handle: res.Handle, Instance: d.Instance}}
}

// params is host.acquire's params map: --param, never nil.
func (t *T) params() map[string]string {
	m := map[string]string{}
	for k, v := range t.s.opts.Params {
		m[k] = v
	}
	return m
}

// git runs a local git command (mu's side of fetch and push).
func (t *T) git(dir string, args ...string) string {
	full := append([]string{"-C", dir, "-c", "user.name=mu-contract", "-c", "user.email=contract@mu.invalid",
		"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)
	cmd := exec.CommandContext(t.Ctx(), "git", full...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(cmd.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	if err := cmd.Run(); err != nil {
		t.Fatalf("local git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String())
}

// localRepo makes a local repository with one commit and returns it and
// the commit's sha.
func (t *T) localRepo() (dir, sha string) {
	dir = t.TempDir()
	t.git(dir, "init", "-q")
	t.git(dir, "commit", "-q", "--allow-empty", "-m", "mu-contract "+t.name)
	return dir, t.git(dir, "rev-parse", "HEAD")
}

// shq quotes s for POSIX sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
