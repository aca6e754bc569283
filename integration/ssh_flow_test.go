//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

func hostTarget(name string) protocol.Target {
	return protocol.Target{Host: protocol.HostRef{Name: name}}
}

// TestSSHFlowThroughBastion drives mu-plugin-ssh to host-b, which only the
// bastion reaches (ProxyJump): exec, push, fetch and checkSteps.
func TestSSHFlowThroughBastion(t *testing.T) {
	e := getEnv(t)
	p := startPlugin(t, e.sshPlugin())
	ctx := ctxFor(t, 3*time.Minute)
	tg := hostTarget("host-b")
	run := randHex(4)

	// exec: the script runs on host-b (its own hostname), streams apart,
	// exit code back, nothing of the plugin's environment leaks.
	res, err := p.Exec(ctx, tg, `hostname; echo err >&2; printf '%s' "${MU_PLUGIN_CANARY:-}"; exit 3`, ".", 20*time.Second)
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	id, _ := containerID(e.Project, "host-b")
	if res.ExitCode == nil || *res.ExitCode != 3 || res.Stderr != "err\n" || !strings.HasPrefix(id, strings.TrimSpace(res.Stdout)) {
		t.Fatalf("exec on host-b: exit %v stdout %q stderr %q (host-b is %.12s)", res.ExitCode, res.Stdout, res.Stderr, id)
	}

	// push: a local commit lands in a new repository on host-b.
	local, rev := localRepo(t, "seed "+run)
	remote := "it-" + run + "/repo"
	res, err = p.Push(ctx, tg, local, remote, rev, 60*time.Second)
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("push: %v %+v", err, res)
	}
	res, err = p.Exec(ctx, tg, fmt.Sprintf("git -C %s cat-file -t %s", remote, rev), ".", 20*time.Second)
	if err != nil || strings.TrimSpace(res.Stdout) != "commit" {
		t.Fatalf("host-b does not hold the pushed commit: %v %+v", err, res)
	}
	// Pushed again: untouched, still success.
	if res, err = p.Push(ctx, tg, local, remote, rev, 60*time.Second); err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("second push: %v %+v", err, res)
	}

	// fetch: a worktree from the pushed commit, a commit made on host-b,
	// fetched back into the local repository.
	wt := "it-" + run + "/wt"
	res, err = p.Exec(ctx, tg, fmt.Sprintf(`set -e
git -C %[1]s worktree add -q --detach ../wt %[2]s
cd %[3]s && echo work > work.txt && git add work.txt && git commit -q -m work && git rev-parse HEAD`, remote, rev, wt), ".", 30*time.Second)
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("worktree and commit on host-b: %v %+v", err, res)
	}
	made := strings.TrimSpace(res.Stdout)
	res, err = p.Fetch(ctx, tg, wt, local, 60*time.Second)
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("fetch: %v %+v", err, res)
	}
	if got := fetchHead(t, local); got != made {
		t.Fatalf("FETCH_HEAD %s, want host-b's commit %s", got, made)
	}
	if parent := git(t, local, "rev-parse", made+"^"); parent != rev {
		t.Fatalf("the fetched commit's parent is %s, want the pushed %s", parent, rev)
	}

	// checkSteps (reach): every step passes, but tcp, which ProxyJump skips.
	steps, err := p.CheckSteps(ctx, protocol.MethodLinkCheckSteps, protocol.CheckStepsParams{Base: protocol.Base{Target: tg}, Phase: protocol.PhaseReach})
	if err != nil {
		t.Fatalf("checkSteps: %v", err)
	}
	seen := map[string]string{}
	for _, s := range steps {
		seen[s.Step] = s.OK.String()
	}
	for _, want := range []string{"resolve", "hostkey", "auth", "sh", "git", "home"} {
		if seen[want] != "true" {
			t.Errorf("step %s: %q, want true (all: %v)", want, seen[want], seen)
		}
	}
	if seen["tcp"] != "null" {
		t.Errorf("step tcp: %q, want null (skipped for the jump host)", seen["tcp"])
	}
	_, _ = p.Exec(ctx, tg, "rm -rf it-"+run, ".", 20*time.Second)
}
