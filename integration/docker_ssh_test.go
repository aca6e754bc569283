//go:build integration

package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/contract"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// mu-plugin-docker with an ssh:// endpoint: the Engine the suite runs on,
// reached only through engine-host's sshd (the Engine's socket is
// bind-mounted there and its user mu is in the socket's group; no docker
// CLI runs there), directly and through the bastion.

// engineLogins counts the SSH logins engine-host's sshd accepted so far.
func engineLogins(t testing.TB, e *Env) int {
	t.Helper()
	id, err := containerID(e.Project, "engine-host")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("docker", "logs", id).CombinedOutput()
	if err != nil {
		t.Fatalf("docker logs engine-host: %v: %s", err, out)
	}
	return strings.Count(string(out), "Accepted publickey for mu")
}

// reach runs link.checkSteps' reach phase and returns its steps by name.
func reach(t testing.TB, p *started) map[string]protocol.Step {
	t.Helper()
	steps, err := caller.Invoke(ctxFor(t, time.Minute), p, protocol.MethodLinkCheckSteps,
		protocol.CheckStepsParams{Base: protocol.Base{Target: drive.HostTarget("it")}, Phase: protocol.PhaseReach})

	if err != nil {
		t.Fatalf("link.checkSteps: %v", err)
	}
	m := map[string]protocol.Step{}
	for _, s := range steps {
		m[s.Step] = s
	}
	return m
}

// TestDockerOverSSH: the whole spawn-to-release flow with
// DOCKER_HOST=ssh://engine-host (an alias of the run's ssh config). The
// plugin logs in once for everything: API calls, exec streams, the pooled
// exec channels, git's bridge. Host check's ssh step names the route, the
// verified host key and the key.
func TestDockerOverSSH(t *testing.T) {
	e := getEnv(t)
	s, env := e.dockerOverSSH("engine-host")
	before := engineLogins(t, e)
	p := startPluginEnv(t, s, env...)
	spawnToRelease(t, e, p)
	steps := reach(t, p)
	ssh := steps["ssh"]
	for _, want := range []string{"mu@127.0.0.1", "through " + e.EngineHost, "verified against known_hosts", "authenticated with " + e.Key, "/var/run/docker.sock"} {
		if ssh.OK != protocol.StepPassed || !strings.Contains(ssh.Detail, want) {
			t.Errorf("ssh step lacks %q: %+v", want, ssh)
		}
	}
	if s := steps["ping"]; s.OK != protocol.StepPassed {
		t.Errorf("ping step: %+v", s)
	}
	if n := engineLogins(t, e) - before; n != 1 {
		t.Errorf("%d logins on engine-host, want 1 (one SSH connection carries everything)", n)
	}
}

// TestDockerOverSSHThroughBastion: the Engine chosen by the current
// context of a DOCKER_CONFIG of the test's own, whose endpoint is
// ssh://engine-jump: engine-host reached only through the bastion
// (ProxyJump). The whole spawn-to-release flow; the ssh step names the
// jump.
func TestDockerOverSSHThroughBastion(t *testing.T) {
	e := getEnv(t)
	cfgDir := t.TempDir()
	writeContext(t, cfgDir, "remote", "ssh://engine-jump")
	if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(`{"currentContext":"remote"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := e.dockerOverSSH("")
	p := startPluginEnv(t, s, "DOCKER_CONFIG="+cfgDir, "DOCKER_HOST=", "DOCKER_CONTEXT=")
	spawnToRelease(t, e, p)
	steps := reach(t, p)
	if s := steps["endpoint"]; s.OK != protocol.StepPassed || !strings.Contains(s.Detail, "ssh://engine-jump (context remote)") || !strings.Contains(s.Detail, "current context") {
		t.Errorf("endpoint step: %+v", s)
	}
	if s := steps["ssh"]; s.OK != protocol.StepPassed || !strings.Contains(s.Detail, "ProxyJump bastion") || !strings.Contains(s.Detail, "mu@engine-host") {
		t.Errorf("ssh step: %+v", s)
	}
}

// writeContext writes a docker context to the CLI's store in dir.
func writeContext(t testing.TB, dir, name, host string) {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	meta, _ := json.Marshal(map[string]any{"Name": name, "Metadata": map[string]any{},
		"Endpoints": map[string]any{"docker": map[string]any{"Host": host, "SkipTLSVerify": false}}})
	p := filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, meta, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestContractDockerOverSSH: the contract suite's host, link, job and
// channel checks (and the canary) against mu-plugin-docker on
// ssh://engine-host, jobs running the test agent.
func TestContractDockerOverSSH(t *testing.T) {
	e := getEnv(t)
	s, env := e.dockerOverSSH("engine-host")
	rep := runContract(t, contract.Options{Argv: s.argv, Env: env, Run: `^(host|link|job|channel|secrets)/`,
		Params: map[string]string{"ttl": "1h"}, JobCmd: string(agent.Script)},
		map[string]bool{"host/dedupe": true, "job/dedupe": true, "channel/steer": true})
	for _, name := range []string{"host/acquire", "host/fence", "link/exec-timeout-remote", "link/fetch", "link/push", "job/start", "job/stop", "channel/send", "channel/watch"} {
		if r, ok := rep.Get(name); !ok || r.Status != contract.Pass {
			t.Errorf("%s did not pass: %+v", name, r)
		}
	}
}
