package docker_test

import (
	"os"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/dockercli"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

func TestPushTimeoutStopsTheRemoteSide(t *testing.T) {
	p := start(t)
	h := p.Acquire(t, "key-push-to", nil).Handle
	local, rev := sandboxtest.LocalRepo(t, 2)
	// A pre-receive hook that hangs: the push times out inside receive-pack.
	p.Run(t, h, "git init -q hung && printf '#!/bin/sh\\nsleep 310\\n' > hung/.git/hooks/pre-receive && chmod +x hung/.git/hooks/pre-receive")
	params := sandboxtest.PushParams(h, local, "hung", rev)
	params.TimeoutMs = 2000
	r := sandboxtest.Must(t, p, protocol.MethodLinkPush, params)
	if r.ExitCode != nil {
		t.Fatalf("hung push: exitCode %d, want null (stderr %q)", *r.ExitCode, r.Stderr)
	}
	if ps := dockercli.Docker(t, "exec", h, "ps", "-eo", "args"); strings.Contains(ps, "sleep 310") || strings.Contains(ps, "receive-pack") {
		t.Errorf("the timed-out push left processes in the container:\n%s", ps)
	}
}

func TestStdinEOFStopsRunsAndExits(t *testing.T) {
	p := start(t, "--log-level", "debug")
	h := p.Acquire(t, "key-eof", nil).Handle
	p.SendAway("link.exec", sandboxtest.ExecParams(h, "sleep 320", ".", 600_000))
	waitfor.Eventually(t, "the run started", func() bool {
		return strings.Contains(dockercli.Docker(t, "exec", h, "ps", "-eo", "args"), "sleep 320")
	})
	if rep := p.CloseStdin(); rep.LeaderKilled() { // its exit, or a kill after 10 s
		t.Fatal("the plugin did not exit after stdin EOF")
	}
	if ps := dockercli.Docker(t, "exec", h, "ps", "-eo", "args"); strings.Contains(ps, "sleep 320") {
		t.Errorf("a run survived the plugin's exit:\n%s\nplugin stderr: %s", ps, p.Stderr)
	}
}

func TestEngineUnreachableIsUnknownNotGone(t *testing.T) {
	const missing = "unix:///nonexistent/docker.sock"
	t.Setenv("DOCKER_HOST", missing)
	p := startOn(t, sandboxtest.NewPrefix()) // no --instance: the plugin loads all the same
	lk := p.Lookup(t, "k", false)
	if !strings.Contains(lk.Unknown, missing) {
		t.Errorf("lookup with the Engine unreachable: %+v, want unknown naming %s", lk, missing)
	}
	st := sandboxtest.Must(t, p, protocol.MethodHostStatus, protocol.Base{Target: sandboxtest.HostTarget("abc")})
	if st.State != "unknown" || !strings.Contains(st.Reason, missing) {
		t.Errorf("status with the Engine unreachable: %+v, want unknown naming %s", st, missing)
	}
	if err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams("k", nil)); err == nil || err.Kind != "retryable" ||
		!strings.Contains(err.Message, missing) || !strings.Contains(err.Message, "is unreachable") || err.Remedy == "" {
		t.Errorf("acquire with the Engine unreachable: %v, want retryable naming %s, with a remedy", err, missing)
	}
	steps := reachSteps(t, p, "")
	if s := steps["ping"]; s.OK != protocol.StepFailed || !strings.Contains(s.Detail, missing) || !strings.Contains(s.Detail, "remedy") {
		t.Errorf("ping step with the Engine unreachable: %+v", s)
	}
	// A job's status is unknown too, never lost; a stop does nothing: retryable.
	jt := sandboxtest.HostTarget("abc")
	jt.Job = &protocol.JobRef{Kind: "docker", Key: "j", Handle: "mu-0"}
	js := sandboxtest.Must(t, p, protocol.MethodJobStatus, protocol.Base{Target: jt})
	if js.State != "unknown" || js.Reason == "" {
		t.Errorf("job.status with the Engine unreachable: %+v, want unknown", js)
	}
	if err := sandboxtest.Err(t, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: "j"}); err == nil || err.Kind != "retryable" {
		t.Errorf("job.stop with the Engine unreachable: %v, want retryable (nothing was done)", err)
	}
}

func TestCanaryNeverLeaves(t *testing.T) {
	canary := "canary-" + sandboxtest.NewPrefix()
	t.Setenv("MU_PLUGIN_CANARY", canary)
	p := start(t, "--log-level", "debug")
	h := p.Acquire(t, "key-canary", nil).Handle
	r := p.Run(t, h, "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'")
	if strings.Contains(r.Stdout+r.Stderr, canary) {
		t.Errorf("the plugin's environment reached the container")
	}
	local, _ := sandboxtest.LocalRepo(t, 1)
	sandboxtest.Must(t, p, protocol.MethodLinkFetch, sandboxtest.FetchParams(h, local, "nothing-here"))
	p.Stop(t)
	for _, line := range p.Wire.Lines(caller.In) {
		if strings.Contains(line, canary) {
			t.Errorf("canary in a reply: %s", line)
		}
	}
	if strings.Contains(p.Stderr.String(), canary) {
		t.Errorf("canary on stderr")
	}
	_ = os.Unsetenv("MU_PLUGIN_CANARY")
}
