package ssh

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/proc"
	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/gitrepo"
	"github.com/mu-org/mu-plugins/protocol"
)

// remoteRepo makes a repo with n commits in the test user's home (owned by
// that user: git refuses a repo another user owns) and returns its HEAD.
func remoteRepo(t testing.TB, d *driver, name string, n int) string {
	t.Helper()
	script := fmt.Sprintf(`set -e; rm -rf %[1]s; git init -q %[1]s; cd %[1]s
i=0; while [ $i -lt %[2]d ]; do echo $i > f$((i %% 50)); git add -A; git -c user.name=t -c user.email=t@e commit -qm "c$i"; i=$((i+1)); done
git rev-parse HEAD`, name, n)
	return strings.TrimSpace(d.mustExec("box", script))
}

func fetchParams(host, remote, local string, timeout time.Duration) protocol.FetchParams {
	return protocol.FetchParams{Base: base(host), RemoteCwd: remote, LocalRepo: local, TimeoutMs: timeout.Milliseconds()}
}

func pushParams(host, local, remote, rev string, timeout time.Duration) protocol.PushParams {
	return protocol.PushParams{Base: base(host), LocalRepo: local, RemoteRepo: remote, Rev: rev, TimeoutMs: timeout.Milliseconds()}
}

func TestFetch(t *testing.T) {
	d := onBox(t)
	head := remoteRepo(t, d, "fetch-src", 30)
	local := t.TempDir()
	gitrepo.Git(t, local, "init", "-q")
	trace := filepath.Join(t.TempDir(), "trace")
	t.Setenv("GIT_TRACE_PACKET", trace)
	res, r := link(d, protocol.MethodLinkFetch, fetchParams("box", "fetch-src", local, 60*time.Second))
	if r != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("fetch: %+v %+v", res, r)
	}
	fh, _ := os.ReadFile(filepath.Join(local, ".git", "FETCH_HEAD"))
	if !strings.HasPrefix(string(fh), head) {
		t.Fatalf("FETCH_HEAD %q does not name the remote HEAD %s", fh, head)
	}
	if n := gitrepo.Git(t, local, "rev-list", "--count", head); n != "30" {
		t.Errorf("history: %s commits, want 30", n)
	}
	tr, _ := os.ReadFile(trace)
	if !strings.Contains(string(tr), "version 2") {
		t.Errorf("git did not speak protocol v2 over the shim")
	}
	// A repo that is not there fails with git's own message.
	res, r = link(d, protocol.MethodLinkFetch, fetchParams("box", "no-such-repo", local, 60*time.Second))
	if r != nil || res.ExitCode == nil || *res.ExitCode == 0 || !strings.Contains(res.Stderr, "no-such-repo") {
		t.Fatalf("fetch of a missing repo: %+v %+v", res, r)
	}
}

func TestPush(t *testing.T) {
	d := onBox(t)
	local, rev := gitrepo.Repo(t, t.TempDir(), "0", "1", "2")
	d.mustExec("box", "rm -rf push-dst")
	res, r := link(d, protocol.MethodLinkPush, pushParams("box", local, "push-dst/repo", rev, 60*time.Second))
	if r != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("push: %+v %+v", res, r)
	}
	refs := d.mustExec("box", `cd push-dst/repo && git cat-file -e "`+rev+`^{commit}" && git for-each-ref --format='%(refname) %(objectname)' && ls -la --time-style=+%s .git/refs/mu/pushed`)
	if !strings.Contains(refs, "refs/mu/pushed/"+rev+" "+rev) {
		t.Fatalf("rev not on its ref: %s", refs)
	}
	// Idempotent: a repeat succeeds and touches nothing.
	res, r = link(d, protocol.MethodLinkPush, pushParams("box", local, "push-dst/repo", rev, 60*time.Second))
	if r != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("repeat push: %+v %+v", res, r)
	}
	again := d.mustExec("box", `cd push-dst/repo && git cat-file -e "`+rev+`^{commit}" && git for-each-ref --format='%(refname) %(objectname)' && ls -la --time-style=+%s .git/refs/mu/pushed`)
	if again != refs {
		t.Fatalf("a repeat push changed the repo:\n%s\nthen\n%s", refs, again)
	}
	// A non-bare repo with a checked-out branch takes the push too.
	d.mustExec("box", "rm -rf push-co && git init -q push-co && cd push-co && git -c user.name=t -c user.email=t@e commit -q --allow-empty -m x")
	res, r = link(d, protocol.MethodLinkPush, pushParams("box", local, "push-co", rev, 60*time.Second))
	if r != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("push into a checked-out repo: %+v %+v", res, r)
	}
	// A directory that is not a repository yet is made one, its files kept
	// (internal/gitlink's preparation, the same on every backend).
	d.mustExec("box", "rm -rf push-plain && mkdir push-plain && echo mine > push-plain/keep")
	res, r = link(d, protocol.MethodLinkPush, pushParams("box", local, "push-plain", rev, 60*time.Second))
	if r != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("push into a plain directory: %+v %+v", res, r)
	}
	if got := d.mustExec("box", "git -C push-plain cat-file -t "+rev+" && cat push-plain/keep"); got != "commit\nmine\n" {
		t.Fatalf("plain directory after push: %q", got)
	}
	// Only full shas.
	_, r = link(d, protocol.MethodLinkPush, pushParams("box", local, "push-dst/repo", rev[:12], 60*time.Second))
	if r == nil || r.Kind != "permanent" {
		t.Fatalf("short rev: want a permanent error, got %+v", r)
	}
}

// TestFetchTimeoutStops: a remote git that blocks (its HEAD is a FIFO) times
// out with exitCode null, and the remote git-upload-pack is stopped too.
func TestFetchTimeoutStops(t *testing.T) {
	s, cfg := server(t, testsshd.Options{})
	noWatchdog(t)
	d, _ := inproc(t, cfg)
	d.mustExec("box", "rm -rf hang-repo && git init -q hang-repo && rm hang-repo/.git/HEAD && mkfifo hang-repo/.git/HEAD")
	local := t.TempDir()
	gitrepo.Git(t, local, "init", "-q")
	res, r := link(d, protocol.MethodLinkFetch, fetchParams("box", "hang-repo", local, 3*time.Second))
	if r != nil {
		t.Fatalf("fetch: %s", r.Message)
	}
	if res.ExitCode != nil {
		t.Fatalf("exitCode %d, want null on timeout (stderr %q)", *res.ExitCode, res.Stderr)
	}
	if left := waitGone(t, s, "hang-repo", 10*time.Second); len(left) > 0 {
		t.Fatalf("remote git left running:\n%s", strings.Join(left, "\n"))
	}
}

// TestCutShort: a git run that fails once its time is up, or once its call
// ended, was cut short by the shim closing its transport (the race
// TestFetchTimeoutStops met under load: exit 128 instead of null); one that
// failed in time, or succeeded, keeps its exit code.
func TestCutShort(t *testing.T) {
	deadline := time.Unix(1000, 0)
	before, after := deadline.Add(-time.Millisecond), deadline
	cases := []struct {
		name   string
		res    proc.Result
		runErr error
		now    time.Time
		want   bool
	}{
		{"killed by proc.Run", proc.Result{ExitCode: -1, Stopped: true}, context.DeadlineExceeded, after, true},
		{"exit 128 once the deadline passed", proc.Result{ExitCode: 128}, nil, after, true},
		{"exit 128 once the context ended", proc.Result{ExitCode: 128}, context.DeadlineExceeded, before, true},
		{"exit 128 once the call was cancelled", proc.Result{ExitCode: 128}, context.Canceled, before, true},
		{"exit 128 in time", proc.Result{ExitCode: 128}, nil, before, false},
		{"exit 0 at the deadline", proc.Result{ExitCode: 0}, context.DeadlineExceeded, after, false},
	}
	for _, c := range cases {
		if got := cutShort(c.res, c.runErr, deadline, c.now); got != c.want {
			t.Errorf("%s: cutShort %v, want %v", c.name, got, c.want)
		}
	}
}
