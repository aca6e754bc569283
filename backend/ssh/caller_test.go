package ssh

// mu-plugin-ssh driven by protocol/caller, the full caller side: the
// registration checks, the load rules, every reply checked against the
// schema, the stop sequence.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/gitrepo"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

func TestWithCaller(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	// "box" is known; "stranger" is the same server with no known host key.
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	stranger := strings.Replace(s.HostBlock("stranger"), "UserKnownHostsFile "+s.KnownHosts, "UserKnownHostsFile /dev/null", 1)
	if err := os.WriteFile(cfg, []byte(s.HostBlock("box")+stranger), 0o600); err != nil {
		t.Fatal(err)
	}
	canary := "mu-canary-5d0b7c19"
	ctx := context.Background()
	p := drive.Start(t, caller.Config{
		Name: "ssh",
		Argv: []string{pluginBin(t), "--config", cfg},
		Env:  []string{"MU_PLUGIN_CANARY=" + canary},
		Need: []string{"link"},
	})
	if inst := p.Declaration().Instance; inst != "ssh:"+cfg {
		t.Errorf("instance %q, want the default derived from --config", inst)
	}
	decl := p.Declaration().Seams.Link
	if decl == nil || !decl.Fetch || !decl.CanPush() || decl.RemoteOnTimeout != "stopping" || decl.Slots != "self" {
		t.Fatalf("declaration %+v", decl)
	}
	box := protocol.Target{Host: protocol.HostRef{Name: "box"}}

	res, err := p.Exec(ctx, box, "echo hi; echo $MU_PLUGIN_CANARY", ".", 20*time.Second)
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 || res.Stdout != "hi\n\n" {
		t.Fatalf("exec: %+v %v", res, err)
	}

	res, err = p.Exec(ctx, box, runaway(3180), ".", 1500*time.Millisecond)
	if err != nil || res.ExitCode != nil {
		t.Fatalf("timed-out exec: %+v %v", res, err)
	}
	if left := waitGone(t, s, "sleep 3180", 10*time.Second); len(left) > 0 {
		t.Fatalf("left after a timed-out answer:\n%s", strings.Join(left, "\n"))
	}

	_, err = p.Exec(ctx, protocol.Target{Host: protocol.HostRef{Name: "stranger"}}, "true", ".", 20*time.Second)
	var re *caller.RemoteError
	if !errors.As(err, &re) || re.Kind != protocol.Human || !strings.Contains(re.Remedy, "ssh-keyscan") {
		t.Fatalf("unknown host key: want a human error with a remedy, got %v", err)
	}

	steps, err := caller.Invoke(ctx, p, protocol.MethodLinkCheckSteps, protocol.CheckStepsParams{Base: protocol.Base{Target: box}, Phase: "reach"})
	if err != nil || len(steps) != 7 {
		t.Fatalf("checkSteps: %v %v", steps, err)
	}

	// fetch and push through the caller's schema checks.
	d := &driver{Plugin: p, t: t}
	head := strings.TrimSpace(d.mustExec("box", "rm -rf cs && git init -q cs && cd cs && git -c user.name=t -c user.email=t@e commit -q --allow-empty -m x && git rev-parse HEAD"))
	local := t.TempDir()
	gitrepo.Git(t, local, "init", "-q")
	res, err = p.Fetch(ctx, box, "cs", local, 60*time.Second)
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("fetch: %+v %v", res, err)
	}
	res, err = p.Push(ctx, box, local, "cs-pushed", head, 60*time.Second)
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("push: %+v %v", res, err)
	}

	// stdin EOF alone, with a script in flight: the group empties by itself
	// within the grace, and the script is stopped.
	go p.Exec(ctx, box, runaway(3190), ".", 120*time.Second)
	if !waitStarted(t, s, "sleep 31904") {
		t.Fatal("the script never started")
	}
	rep := p.CloseStdin()
	if !rep.Graceful {
		t.Fatalf("the plugin's group did not empty by itself after stdin EOF: %+v", rep)
	}
	if left := waitGone(t, s, "sleep 3190", 10*time.Second); len(left) > 0 {
		t.Fatalf("left after the plugin exited:\n%s", strings.Join(left, "\n"))
	}
	for _, l := range append(p.Wire.Lines(caller.In), p.Stderr.String()) {
		if strings.Contains(l, canary) {
			t.Fatalf("the canary leaked: %.300s", l)
		}
	}
}
