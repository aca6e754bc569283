package docker_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/dockercli"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/protocol"
)

// link.push and link.fetch against a container: a push lands rev on its
// own ref (again untouched), into a bare, a checked-out, a plain and an
// oddly named directory; a fetch brings back what was committed there.
func TestPushAndFetchMoveCommits(t *testing.T) {
	p := start(t)
	h := p.Acquire(t, "key-git", nil).Handle
	local, rev := sandboxtest.LocalRepo(t, 3)

	// push creates the remote repository and lands rev on a ref never checked out.
	r := sandboxtest.Must(t, p, protocol.MethodLinkPush, sandboxtest.PushParams(h, local, "work/repo", rev))
	if sandboxtest.ExitCode(r) != "0" {
		t.Fatalf("push: code %s stderr %q", sandboxtest.ExitCode(r), r.Stderr)
	}
	if got := p.Run(t, h, "git -C work/repo cat-file -t "+rev+" && git -C work/repo rev-list --count "+rev+" && git -C work/repo for-each-ref --format='%(refname)'"); got.Stdout != "commit\n3\nrefs/mu/pushed/"+rev+"\n" {
		t.Errorf("remote after push: %q %q", got.Stdout, got.Stderr)
	}
	// Idempotent: a repo that already holds rev succeeds untouched.
	before := p.Run(t, h, "stat -c %Y.%s work/repo/.git/packed-refs work/repo/.git/refs/mu/pushed/"+rev+" 2>&1; ls work/repo/.git/objects | wc -l")
	time.Sleep(1100 * time.Millisecond) // so that a touch would change a second-granular mtime
	r = sandboxtest.Must(t, p, protocol.MethodLinkPush, sandboxtest.PushParams(h, local, "work/repo", rev))
	if sandboxtest.ExitCode(r) != "0" {
		t.Fatalf("second push: %+v", r)
	}
	if after := p.Run(t, h, "stat -c %Y.%s work/repo/.git/packed-refs work/repo/.git/refs/mu/pushed/"+rev+" 2>&1; ls work/repo/.git/objects | wc -l"); after.Stdout != before.Stdout {
		t.Errorf("second push touched the repo:\n%s\n%s", before.Stdout, after.Stdout)
	}
	// Pushing into a repo whose branch is checked out works (the ref is not checked out).
	p.Run(t, h, "git init -q co && cd co && git commit -q --allow-empty -m x")
	r = sandboxtest.Must(t, p, protocol.MethodLinkPush, sandboxtest.PushParams(h, local, "co", rev))
	if sandboxtest.ExitCode(r) != "0" {
		t.Errorf("push into a non-bare repo: %+v", r)
	}

	// A directory that is not a repository yet is made one, its files kept
	// (internal/gitlink's preparation, the same on every backend).
	p.Run(t, h, "mkdir -p plain && echo mine > plain/keep")
	r = sandboxtest.Must(t, p, protocol.MethodLinkPush, sandboxtest.PushParams(h, local, "plain", rev))
	if sandboxtest.ExitCode(r) != "0" {
		t.Errorf("push into a plain directory: %+v", r)
	}
	if got := p.Run(t, h, "git -C plain cat-file -t "+rev+" && cat plain/keep"); got.Stdout != "commit\nmine\n" {
		t.Errorf("plain directory after push: %q %q", got.Stdout, got.Stderr)
	}

	// Paths with spaces and % survive ext::'s escaping.
	r = sandboxtest.Must(t, p, protocol.MethodLinkPush, sandboxtest.PushParams(h, local, "sp ace/%s 100%", rev))
	if sandboxtest.ExitCode(r) != "0" {
		t.Errorf("push to a path with a space and %%: %+v", r)
	}
	if got := p.Run(t, h, "git -C 'sp ace/%s 100%' cat-file -t "+rev); got.Stdout != "commit\n" {
		t.Errorf("remote with a space: %q %q", got.Stdout, got.Stderr)
	}
	p.Run(t, h, "git -C 'sp ace/%s 100%' reset -q --hard "+rev) // give it a HEAD to fetch
	r = sandboxtest.Must(t, p, protocol.MethodLinkFetch, sandboxtest.FetchParams(h, local, "sp ace/%s 100%"))
	fh, _ := exec.Command("git", "-C", local, "rev-parse", "FETCH_HEAD").Output()
	if sandboxtest.ExitCode(r) != "0" || strings.TrimSpace(string(fh)) != rev {
		t.Errorf("fetch from a path with a space and %%: %+v, FETCH_HEAD %q", r, fh)
	}

	// Work happens in the container: in the repo and in a worktree.
	work := p.Run(t, h, "cd work/repo && git worktree add -q ../wt "+rev+" && cd ../wt && echo new > g && git add g && git commit -q -m remote && git rev-parse HEAD")
	remoteHead := strings.TrimSpace(work.Stdout)
	if sandboxtest.ExitCode(work) != "0" || len(remoteHead) != 40 {
		t.Fatalf("remote commit: %+v", work)
	}
	for _, cwd := range []string{"work/wt", "/home/mu/work/wt"} {
		_ = os.Remove(filepath.Join(local, ".git", "FETCH_HEAD"))
		r = sandboxtest.Must(t, p, protocol.MethodLinkFetch, sandboxtest.FetchParams(h, local, cwd))
		if sandboxtest.ExitCode(r) != "0" {
			t.Fatalf("fetch %s: %+v", cwd, r)
		}
		fh, err := exec.Command("git", "-C", local, "rev-parse", "FETCH_HEAD").Output()
		if err != nil || strings.TrimSpace(string(fh)) != remoteHead {
			t.Errorf("fetch %s: FETCH_HEAD %q (%v), want the remote HEAD %s", cwd, fh, err, remoteHead)
		}
	}
	// A fetched commit carries its history.
	if out, err := exec.Command("git", "-C", local, "rev-list", "--count", "FETCH_HEAD").Output(); err != nil || strings.TrimSpace(string(out)) != "4" {
		t.Errorf("history of FETCH_HEAD: %q %v", out, err)
	}

	// Refusals: a short or symbolic rev, a missing local repo, a failing remote.
	for _, bad := range []string{rev[:12], "HEAD", strings.ToUpper(rev)} {
		if err := sandboxtest.Err(t, p, protocol.MethodLinkPush, sandboxtest.PushParams(h, local, "work/repo", bad)); err == nil || err.Kind != "permanent" {
			t.Errorf("push rev %q: %v, want permanent", bad, err)
		}
	}
	if err := sandboxtest.Err(t, p, protocol.MethodLinkFetch, sandboxtest.FetchParams(h, "/no/such/repo", "work/repo")); err == nil || err.Kind != "permanent" {
		t.Errorf("fetch into a missing local repo: %v", err)
	}
	r = sandboxtest.Must(t, p, protocol.MethodLinkFetch, sandboxtest.FetchParams(h, local, "no/such/remote"))
	if sandboxtest.ExitCode(r) == "0" {
		t.Errorf("fetch of a missing remote repo succeeded: %+v", r)
	}
	// Nothing of the transfers is left running in the container.
	if ps := dockercli.Docker(t, "exec", h, "ps", "-eo", "args"); strings.Contains(ps, "upload-pack") || strings.Contains(ps, "receive-pack") {
		t.Errorf("git processes left:\n%s", ps)
	}
}
