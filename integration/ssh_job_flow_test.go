//go:build integration

package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/gitrepo"
	"github.com/mu-org/mu-plugins/internal/testutil/panes"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// TestSSHSpawnThroughBastion: the whole spawn on host-b (reached only
// through the bastion) as mu does it: the site (a pushed commit, a
// worktree made with link.exec), job.start of the test agent, the view in
// a real tmux pane with stdin from /dev/null, readiness, a send and its
// watch, an in-life link.fetch of the agent's commit, the view killed and
// re-attached, job.stop, the final fetch.
func TestSSHSpawnThroughBastion(t *testing.T) {
	e := getEnv(t)
	p := startPlugin(t, e.sshPlugin())
	ctx := waitfor.Context(t, 5*time.Minute)
	host := drive.HostTarget("host-b")
	run := words.RandHex(4)

	local, rev := gitrepo.Repo(t, t.TempDir(), "spawn "+run)
	repo, tree := "spawn-"+run+"/repo", "spawn-"+run+"/tree"
	if r, err := p.Push(ctx, host, local, repo, rev, time.Minute); err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("link.push: %+v %v", r, err)
	}
	if r, err := p.Exec(ctx, host, "git -C "+repo+" worktree add -q --detach ../tree "+rev, ".", time.Minute); err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("worktree: %+v %v", r, err)
	}

	key, name := "spawn-"+run, "spawned"
	spec := protocol.JobSpec{Workstream: "it", Name: name, Harness: "mu-test-agent", Role: "full-access",
		Cmd: string(agent.Script), CommandSource: "test", Cwd: tree, Env: map[string]string{"MU_TEST_AGENT_MS": "200"}}
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: key, Spec: spec})
	if err != nil {
		t.Fatalf("job.start: %v", err)
	}
	jt := drive.JobTarget(host, "ssh", key, res.Handle, "it", name)

	tm := panes.NewPanes(t)
	tm.Open(t, "view1", res.View.Command, res.View.Env)
	tm.Shows(t, "view1", "mu test agent: ready")
	if b := drive.Baseline(t, ctx, p.Plugin, jt); b.Runs != 0 {
		t.Fatalf("baseline: %+v", b)
	}
	text := "please commit [[commit]]"
	if sr, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: text, MsgID: "m1", Mode: protocol.ModeFollowUp}); err != nil || sr.Ack != protocol.AckConfirmed {
		t.Fatalf("channel.send: %+v %v", sr, err)
	}
	if o := drive.Settled(t, ctx, p.Plugin, jt, 0); o.Runs != 1 || o.LastText != "agent: "+text {
		t.Fatalf("the settled turn: %+v", o)
	}
	if r, err := p.Fetch(ctx, host, tree, local, time.Minute); err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("in-life link.fetch: %+v %v", r, err)
	}
	if subj := gitrepo.Git(t, local, "log", "-1", "--format=%s", "FETCH_HEAD"); subj != "mu-test-agent: turn 1" {
		t.Fatalf("FETCH_HEAD is %q, not the agent's commit", subj)
	}
	tm.Shows(t, "view1", "[settled turn 1]")

	drive.Reattach(t, ctx, p.Plugin, tm, jt, "view1", "view2", "[settled turn 1]")

	if _, err := caller.Invoke(ctx, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: key}); err != nil {
		t.Fatalf("job.stop: %v", err)
	}
	tm.Shows(t, "view2", "[mu: the job")
	if r, err := p.Fetch(ctx, host, tree, local, time.Minute); err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("the final link.fetch: %+v %v", r, err)
	}
	if got := gitrepo.Git(t, local, "rev-parse", "FETCH_HEAD^"); got != rev {
		t.Fatalf("the agent's commit's parent is %s, not the pushed %s", got, rev)
	}
	if strings.Contains(res.View.Command, canary) {
		t.Fatal("the view carries the canary")
	}
}
