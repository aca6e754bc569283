package docker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/dockercli"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/gitrepo"
	"github.com/mu-org/mu-plugins/internal/testutil/panes"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// A spawn as mu does it (plugin-protocol-v1.md, "A spawn on a plugin
// host"), through the caller side on a fresh Docker host: the site (a
// pushed commit and a worktree made from it), job.start, the view in a
// local tmux pane with stdin from /dev/null, readiness from
// channel.baseline, a send, its settled watch and the agent's commit
// collected with link.fetch; the view killed with the job still running, a
// re-attach, job.stop and host.release.
func TestSpawnAsMuDoesIt(t *testing.T) {
	ctx := waitfor.Context(t, 5*time.Minute)
	p, host := spawnPlugin(t, ctx)

	// The site: a local commit pushed, a worktree made from it.
	local, rev := gitrepo.Repo(t, t.TempDir(), "the project\n")
	if r, err := p.Push(ctx, host, local, "repo", rev, time.Minute); err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("link.push: %+v %v", r, err)
	}
	mustExec(t, ctx, p, host, "git -C repo worktree add -q --detach ../tree "+rev)

	// job.start: the test agent in the worktree.
	key, name := "job-"+sandboxtest.NewPrefix(), "spawned"
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: key,
		Spec: jobSpec(name, "tree", map[string]string{"MU_TEST_AGENT_MS": "300", "GREETING": "it's \"quoted\" $(not run)"})})

	if err != nil {
		t.Fatalf("job.start: %v", err)
	}
	if !strings.HasPrefix(res.Handle, "mu-") || !strings.Contains(res.View.Command, "'view'") {
		t.Fatalf("job.start: %+v", res)
	}
	jt := drive.JobTarget(host, "docker", key, res.Handle, "ws", name)

	// The view, as mu runs it: a local pane, stdin from /dev/null.
	tm := panes.NewPanes(t)
	tm.Open(t, "view1", res.View.Command, res.View.Env)
	tm.Shows(t, "view1", "mu test agent: ready")

	// Readiness.
	if b := drive.Baseline(t, ctx, p, jt); b.Runs != 0 || b.Incarnation == "" {
		t.Fatalf("baseline: %+v", b)
	}
	st, err := caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt})
	if err != nil || st.State != protocol.JobRunning {
		t.Fatalf("job.status: %+v %v", st, err)
	}

	// A send asking for a commit; its watch settles; the commit is collected.
	text := "please commit [[commit]]\nwith a second line 'and quotes'"
	sr, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: text, MsgID: "msg-1", Mode: protocol.ModeFollowUp})
	if err != nil || sr.Ack != protocol.AckConfirmed || sr.Baseline == nil || *sr.Baseline != 0 {
		t.Fatalf("channel.send: %+v %v", sr, err)
	}
	o := drive.Settled(t, ctx, p, jt, 0)
	if o.Runs != 1 || o.LastText != "agent: "+text {
		t.Fatalf("the settled turn: %+v", o)
	}
	if r, err := p.Fetch(ctx, host, "tree", local, time.Minute); err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("link.fetch: %+v %v", r, err)
	}
	if subj := gitrepo.Git(t, local, "log", "-1", "--format=%s", "FETCH_HEAD"); subj != "mu-test-agent: turn 1" {
		t.Fatalf("FETCH_HEAD is %q, not the agent's commit", subj)
	}
	if parent := gitrepo.Git(t, local, "rev-parse", "FETCH_HEAD^"); parent != rev {
		t.Fatalf("the agent's commit's parent is %s, not the pushed %s", parent, rev)
	}
	tm.Shows(t, "view1", "[settled turn 1]")

	// The view killed: the job runs on. A re-attach gives a working view.
	drive.Reattach(t, ctx, p, tm, jt, "view1", "view2", "[settled turn 1]")
	if _, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: "again", MsgID: "msg-2", Mode: protocol.ModeFollowUp}); err != nil {
		t.Fatalf("channel.send: %v", err)
	}
	drive.Settled(t, ctx, p, jt, 1)
	tm.Shows(t, "view2", "[settled turn 2]")

	// job.stop, then the view says the job ended; host.release.
	if _, err := caller.Invoke(ctx, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: key}); err != nil {
		t.Fatalf("job.stop: %v", err)
	}
	if st, err := caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt}); err != nil || st.State != protocol.JobEnded {
		t.Fatalf("job.status after job.stop: %+v %v", st, err)
	}
	tm.Shows(t, "view2", "[mu: the job")
	if _, err := caller.Invoke(ctx, p, protocol.MethodHostRelease, protocol.KeyParams{Base: protocol.Base{Target: protocol.Target{Host: protocol.HostRef{Name: "box"}}}, Key: hostKeyOf(t, p, host)}); err != nil {
		t.Fatalf("host.release: %v", err)
	}
	if hs, err := caller.Invoke(ctx, p, protocol.MethodHostStatus, protocol.Base{Target: host}); err != nil || hs.State != protocol.HostGone {
		t.Fatalf("host.status after release: %+v %v", hs, err)
	}
	if st, err := caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt}); err != nil || st.State != protocol.JobLost {
		t.Fatalf("job.status on a released host: %+v %v", st, err)
	}
}

// hostKeyOf is the acquire key of a host (its container's label).
func hostKeyOf(t testing.TB, p interface{}, host protocol.Target) string {
	return dockercli.Docker(t, "inspect", "-f", `{{index .Config.Labels "org.mu-plugins.key"}}`, host.Host.Handle)
}
