//go:build integration

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/dockercli"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/gitrepo"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

func execOK(t testing.TB, ctx context.Context, p *started, tg protocol.Target, script string) string {
	t.Helper()
	r, err := p.Exec(ctx, tg, script, ".", time.Minute)
	if err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("link.exec %q: %v %+v", script, err, r)
	}
	return r.Stdout
}

// TestDockerSpawnToRelease: the whole spawn-to-release flow on a docker
// host, as mu runs it: acquire, push and a worktree, job.start with the
// test agent, readiness, a send asking for a commit, its watch settling,
// the commit collected with fetch, job.stop, release.
func TestDockerSpawnToRelease(t *testing.T) {
	e := getEnv(t)
	spawnToRelease(t, e, startPlugin(t, e.dockerPlugin()))
}

// spawnToRelease is the whole flow with p, a mu-plugin-docker.
func spawnToRelease(t *testing.T, e *Env, p *started) {
	ctx := waitfor.Context(t, 5*time.Minute)
	run := words.RandHex(4)
	hostKey := "flow-" + run
	host := acquireHost(t, p, hostKey)
	if hs, err := caller.Invoke(ctx, p, protocol.MethodHostStatus, protocol.Base{Target: host}); err != nil || hs.State != protocol.HostUp {
		t.Fatalf("host.status: %+v %v", hs, err)
	}

	// The site: a local commit pushed, a worktree made from it.
	local, rev := gitrepo.Repo(t, t.TempDir(), "the project "+run)
	if r, err := p.Push(ctx, host, local, "repo", rev, time.Minute); err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("link.push: %+v %v", r, err)
	}
	execOK(t, ctx, p, host, "git -C repo worktree add -q --detach ../tree "+rev)

	// job.start: the test agent in the worktree.
	key, name := "job-"+run, "flow"
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: key, Spec: agentSpec(name, key, "tree", 200)})
	if err != nil {
		t.Fatalf("job.start: %v", err)
	}
	jt := drive.JobTarget(host, "docker", key, res.Handle, "it", name)
	if b := drive.Baseline(t, ctx, p.Plugin, jt); b.Runs != 0 || b.Incarnation == "" {
		t.Fatalf("baseline: %+v", b)
	}
	if st, err := caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt}); err != nil || st.State != protocol.JobRunning {
		t.Fatalf("job.status: %+v %v", st, err)
	}

	// A send asking for a commit; the watch settles; fetch collects it.
	text := "please commit [[commit]]"
	sr, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: text, MsgID: "msg-" + run, Mode: protocol.ModeFollowUp})
	if err != nil || sr.Ack != protocol.AckConfirmed || sr.Baseline == nil || *sr.Baseline != 0 {
		t.Fatalf("channel.send: %+v %v", sr, err)
	}
	if o := drive.Settled(t, ctx, p.Plugin, jt, 0); o.Runs != 1 || o.LastText != "agent: "+text {
		t.Fatalf("the settled turn: %+v", o)
	}
	if r, err := p.Fetch(ctx, host, "tree", local, time.Minute); err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("link.fetch: %+v %v", r, err)
	}
	got := fetchHead(t, local)
	if inTree := strings.TrimSpace(execOK(t, ctx, p, host, "git -C tree rev-parse HEAD")); got != inTree || got == rev {
		t.Fatalf("FETCH_HEAD %s, want the agent's commit %s (the pushed base is %s)", got, inTree, rev)
	}
	if parent := gitrepo.Git(t, local, "rev-parse", got+"^"); parent != rev {
		t.Fatalf("the agent's commit's parent is %s, not the pushed %s", parent, rev)
	}

	// job.stop: the job ends, its agent is gone; release: the host is gone.
	if _, err := caller.Invoke(ctx, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: key}); err != nil {
		t.Fatalf("job.stop: %v", err)
	}
	if st, err := caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt}); err != nil || st.State != protocol.JobEnded {
		t.Fatalf("job.status after job.stop: %+v %v", st, err)
	}
	if n, err := countIn(ctx, host.Host.Handle, "job", key); err != nil || n != 0 {
		t.Fatalf("after job.stop, %d agent processes (%v)", n, err)
	}
	if _, err := caller.Invoke(ctx, p, protocol.MethodHostRelease, protocol.KeyParams{Base: protocol.Base{Target: drive.HostTarget("it")}, Key: hostKey}); err != nil {
		t.Fatalf("host.release: %v", err)
	}
	if hs, err := caller.Invoke(ctx, p, protocol.MethodHostStatus, protocol.Base{Target: host}); err != nil || hs.State != protocol.HostGone {
		t.Fatalf("host.status after release: %+v %v", hs, err)
	}
	if hosts, fences := hostContainers(t, e, hostKey); hosts+fences != 0 {
		t.Fatalf("after release, %d containers for the key", hosts+fences)
	}
}

// TestDrillContainerKilled: the container is killed under a running job.
// The job reads lost or ended; the host reads gone only once the container
// is really gone (removed), never while it still exists.
func TestDrillContainerKilled(t *testing.T) {
	e := getEnv(t)
	const trials = 3
	p := startPlugin(t, e.dockerPlugin())
	run := words.RandHex(4)
	good := 0
	for i := 0; i < trials; i++ {
		if containerKilledTrial(t, p, fmt.Sprintf("kill-%s-%d", run, i)) {
			good++
		}
	}
	drillLine(t, "container-killed", trials, good)
}

func containerKilledTrial(t *testing.T, p *started, hostKey string) bool {
	ctx := waitfor.Context(t, 3*time.Minute)
	host := acquireHost(t, p, hostKey)
	key := "job-" + hostKey
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: key, Spec: agentSpec("k", key, ".", 200)})
	if err != nil {
		t.Errorf("%s: job.start: %v", hostKey, err)
		return false
	}
	jt := drive.JobTarget(host, "docker", key, res.Handle, "it", "k")
	drive.Baseline(t, ctx, p.Plugin, jt)
	if _, err := dockercli.DockerCLI(ctx, "kill", host.Host.Handle); err != nil {
		t.Errorf("%s: %v", hostKey, err)
		return false
	}
	good := true
	st, err := caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt})
	if err != nil || (st.State != protocol.JobLost && st.State != protocol.JobEnded) {
		t.Errorf("%s: job.status with the container killed: %+v %v, want lost or ended", hostKey, st, err)
		good = false
	}
	hs, err := caller.Invoke(ctx, p, protocol.MethodHostStatus, protocol.Base{Target: host})
	if err != nil || hs.State == protocol.HostGone || hs.State == protocol.HostUp {
		t.Errorf("%s: host.status with the container killed but present: %+v %v, want neither gone nor up", hostKey, hs, err)
		good = false
	}
	if _, err := dockercli.DockerCLI(ctx, "rm", "-f", host.Host.Handle); err != nil {
		t.Errorf("%s: %v", hostKey, err)
		return false
	}
	if hs, err := caller.Invoke(ctx, p, protocol.MethodHostStatus, protocol.Base{Target: host}); err != nil || hs.State != protocol.HostGone {
		t.Errorf("%s: host.status with the container removed: %+v %v, want gone", hostKey, hs, err)
		good = false
	}
	if st, err := caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt}); err != nil || (st.State != protocol.JobLost && st.State != protocol.JobEnded) {
		t.Errorf("%s: job.status with the container removed: %+v %v, want lost or ended", hostKey, st, err)
		good = false
	}
	t.Logf("%s: job %s, host %s (%s) then gone", hostKey, st.State, hs.State, cut(hs.Remedy+hs.Reason, 80))
	return good
}
