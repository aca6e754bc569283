package docker_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	dockerb "github.com/mu-org/mu-plugins/backend/docker"
	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/protocol"
)

// startEnv starts the plugin with env set over the test's environment (an
// empty value unsets: every Docker variable reads empty as unset).
func startEnv(t testing.TB, env map[string]string, args ...string) *plugin {
	t.Helper()
	testimage.Ensure(t) // with the test's own environment, before env changes it
	for k, v := range env {
		t.Setenv(k, v)
	}
	return start(t, args...)
}

// dockerCLI runs the docker CLI with env over the test's environment and
// reports whether it succeeded.
func dockerCLI(env map[string]string, args ...string) ([]byte, error) {
	cmd := exec.Command("docker", args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd.CombinedOutput()
}

// hostFlow acquires a host, runs a script and pushes a commit into it, and
// releases it: every kind of Engine traffic (API calls, pooled exec
// channels, git's bridge in its own process).
func hostFlow(t *testing.T, p *plugin, key string) {
	t.Helper()
	h := p.Acquire(t, key, nil).Handle
	if r := p.Run(t, h, "echo hi"); r.Stdout != "hi\n" {
		t.Errorf("exec: %+v", r)
	}
	local, rev := sandboxtest.LocalRepo(t, 1)
	r := sandboxtest.Must(t, p, protocol.MethodLinkPush, sandboxtest.PushParams(h, local, "repo", rev))
	if r.ExitCode == nil || *r.ExitCode != 0 {
		t.Errorf("push: %+v", r)
	}
	sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams(key))
}

// reachSteps runs link.checkSteps reach and returns its steps by name.
func reachSteps(t *testing.T, p *plugin, handle string) map[string]protocol.Step {
	t.Helper()
	steps := sandboxtest.Must(t, p, protocol.MethodLinkCheckSteps, protocol.CheckStepsParams{Base: protocol.Base{Target: sandboxtest.HostTarget(handle)}, Phase: "reach"})
	m := map[string]protocol.Step{}
	for _, s := range steps {
		m[s.Step] = s
	}
	return m
}

// The current context of a DOCKER_CONFIG selects the Engine, through a
// path only the context names (a relaying socket that counts connections):
// `docker info` and the plugin both go through it. DOCKER_HOST overrides
// the context (nothing goes through it then), and --context overrides
// DOCKER_HOST; git's bridge and the job view follow the plugin's endpoint,
// not their own environment.
func TestContextSelectsTheEngine(t *testing.T) {
	proxy, host := startUnixProxy(t)
	store := newContextStore(t, "probe")
	store.add("probe", host, false, nil)
	env := map[string]string{"DOCKER_CONFIG": store.dir, "DOCKER_HOST": "", "DOCKER_CONTEXT": ""}

	if out, err := dockerCLI(env, "info", "--format", "{{.ID}}"); err != nil || proxy.conns.Load() == 0 {
		t.Fatalf("docker info with the context: %v %s; %d connections through the context's socket", err, out, proxy.conns.Load())
	}
	before := proxy.conns.Load()
	p := startEnv(t, env)
	hostFlow(t, p, "key-ctx")
	if n := proxy.conns.Load() - before; n == 0 {
		t.Errorf("the plugin never used the current context's endpoint %s", host)
	}
	ep := reachSteps(t, p, "")["endpoint"]
	if ep.OK != protocol.StepPassed || !strings.Contains(ep.Detail, host) || !strings.Contains(ep.Detail, "context probe") {
		t.Errorf("endpoint step: %+v", ep)
	}
	if want, _ := dockerb.ResolveEndpoint("", os.Getenv); p.decl.Instance != want.Instance() {
		t.Errorf("instance %q, want %q (from the context's endpoint)", p.decl.Instance, want.Instance())
	}
	p.Stop(t)

	// DOCKER_HOST beats the current context: nothing goes through it.
	t.Setenv("DOCKER_HOST", "unix://"+engineSocket())
	before = proxy.conns.Load()
	q := start(t)
	hostFlow(t, q, "key-ctx-host")
	if n := proxy.conns.Load() - before; n != 0 {
		t.Errorf("with DOCKER_HOST set, %d connections went through the context's endpoint", n)
	}
	if ep := reachSteps(t, q, "")["endpoint"]; !strings.Contains(ep.Detail, "DOCKER_HOST") {
		t.Errorf("endpoint step with DOCKER_HOST: %+v", ep)
	}
	q.Stop(t)

	// --context beats DOCKER_HOST, for the plugin and for the bridge it
	// runs (whose own environment still says DOCKER_HOST=nowhere).
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	before = proxy.conns.Load()
	r := start(t, "--context", "probe")
	hostFlow(t, r, "key-ctx-flag")
	if n := proxy.conns.Load() - before; n == 0 {
		t.Errorf("--context probe never used the context's endpoint")
	}
}

// TCP with TLS (DOCKER_TLS_VERIFY, DOCKER_CERT_PATH) against a real TLS
// endpoint: a relay with generated certificates in front of the Engine's
// socket. The right CA works (as for the docker CLI); the wrong one is
// refused with an error naming the endpoint, and the plugin still loads.
func TestTLSEndpoint(t *testing.T) {
	ca, client := newTestPKI(t, "mu-test-ca")
	proxy, host := startTLSProxy(t, ca)
	right := map[string]string{"DOCKER_HOST": host, "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": certDir(t, ca, client), "DOCKER_CONTEXT": ""}
	if out, err := dockerCLI(right, "info", "--format", "{{.ID}}"); err != nil {
		t.Fatalf("docker info through the TLS relay with the right CA: %v %s", err, out)
	}
	wrongCA, _ := newTestPKI(t, "mu-other-ca")
	wrong := map[string]string{"DOCKER_HOST": host, "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": certDir(t, wrongCA, client), "DOCKER_CONTEXT": ""}
	if out, err := dockerCLI(wrong, "info", "--format", "{{.ID}}"); err == nil {
		t.Fatalf("docker info with the wrong CA succeeded: %s", out)
	}

	before := proxy.conns.Load()
	p := startEnv(t, right)
	hostFlow(t, p, "key-tls")
	if proxy.conns.Load() == before {
		t.Errorf("the plugin never went through the TLS endpoint")
	}
	if ep := reachSteps(t, p, "")["endpoint"]; !strings.Contains(ep.Detail, host+" over TLS") {
		t.Errorf("endpoint step: %+v", ep)
	}
	p.Stop(t)

	for k, v := range wrong {
		t.Setenv(k, v)
	}
	q := start(t)
	err := sandboxtest.Err(t, q, protocol.MethodHostAcquire, sandboxtest.AcquireParams("key-tls-wrong", nil))
	if err == nil || err.Kind != "retryable" || !strings.Contains(err.Message, host) || !strings.Contains(err.Message, "certificate") {
		t.Errorf("acquire with the wrong CA: %v, want retryable naming %s and the certificate", err, host)
	}
	if ping := reachSteps(t, q, "")["ping"]; ping.OK != protocol.StepFailed || !strings.Contains(ping.Detail, "remedy") {
		t.Errorf("ping step with the wrong CA: %+v", ping)
	}
	if n := len(labelled("org.mu-plugins.key=key-tls-wrong")); n != 0 {
		t.Errorf("%d containers made through a refused TLS endpoint", n)
	}
	q.Stop(t)

	// The same endpoint from a context whose TLS files are in the store.
	store := newContextStore(t, "")
	store.add("tls", host, false, map[string][]byte{"ca.pem": ca.certPEM, "cert.pem": client.certPEM, "key.pem": client.keyPEM})
	t.Setenv("DOCKER_CONFIG", store.dir)
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_TLS_VERIFY", "")
	t.Setenv("DOCKER_CERT_PATH", "")
	before = proxy.conns.Load()
	r := start(t, "--context", "tls")
	hostFlow(t, r, "key-tls-ctx")
	if proxy.conns.Load() == before {
		t.Errorf("the TLS context never went through its endpoint")
	}
}

// An Engine that accepts and never answers: the plugin still answers the
// handshake (nothing is asked of the Engine before it), answers a call
// with an error naming the endpoint once its bounded first contact gives
// up, host check says the same with a remedy, and stdin's EOF ends it.
func TestEngineThatNeverAnswers(t *testing.T) {
	sock := silentSocket(t)
	t.Setenv("DOCKER_HOST", sock)
	p := startOn(t, sandboxtest.NewPrefix()) // the handshake, within 30 s
	if !strings.Contains(string(p.DeclarationRaw()), `"instance":"docker-`) {
		t.Fatalf("initialize with a silent Engine: %s", p.DeclarationRaw())
	}
	t0 := time.Now()
	rep := sandboxtest.Send(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams("key-silent", nil))
	t.Logf("acquire against a silent Engine answered in %v", time.Since(t0).Round(time.Millisecond))
	if e := rep.Error; e == nil || e.Kind != "retryable" || !strings.Contains(e.Message, sock) ||
		!strings.Contains(e.Message, "did not answer within 2s") || e.Remedy == "" {
		t.Errorf("acquire with a silent Engine: %s", rep.Raw)
	}
	var lk protocol.HostLookupResult
	if r := sandboxtest.Send(t, p, protocol.MethodHostLookup, sandboxtest.LookupParams("key-silent", false)); r.Error != nil || json.Unmarshal(r.Result, &lk) != nil || !strings.Contains(lk.Unknown, sock) {
		t.Errorf("lookup with a silent Engine: %s", r.Raw)
	}
	steps := reachSteps(t, p, "")
	if s := steps["endpoint"]; s.OK != protocol.StepPassed || !strings.Contains(s.Detail, sock) || !strings.Contains(s.Detail, "DOCKER_HOST") {
		t.Errorf("endpoint step: %+v", s)
	}
	if s := steps["ping"]; s.OK != protocol.StepFailed || !strings.Contains(s.Detail, sock) || !strings.Contains(s.Detail, "remedy") {
		t.Errorf("ping step: %+v", s)
	}
	if s := steps["git"]; s.OK != protocol.StepSkipped {
		t.Errorf("git step after a failed ping: %+v", s)
	}
	p.Stop(t) // fails the test unless the plugin exits on stdin's EOF
}

// stdin's EOF is honoured from the first instant: a plugin whose Engine
// hangs, closed before any request, exits.
func TestStdinEOFBeforeTheHandshake(t *testing.T) {
	t.Setenv("DOCKER_HOST", silentSocket(t))
	r := drive.StartRaw(t, pluginConfig(binPath(t), sandboxtest.NewPrefix())) // no handshake
	if rep := r.CloseStdin(); rep.LeaderKilled() {
		t.Errorf("the plugin did not exit within 10 s of stdin EOF")
	}
}

// The instance derives from the configuration, not from the Engine: the
// same endpoint gives the same instance whether its Engine answers or not,
// and another endpoint another instance.
func TestInstanceFromTheEndpoint(t *testing.T) {
	missing := "unix:///nonexistent/docker.sock"
	t.Setenv("DOCKER_HOST", missing)
	a := startOn(t, sandboxtest.NewPrefix())
	a.Stop(t)
	b := startOn(t, sandboxtest.NewPrefix())
	b.Stop(t)
	want := dockerb.Endpoint{Host: missing}.Instance()
	if a.decl.Instance != want || b.decl.Instance != want {
		t.Errorf("instances %q, %q; want %q both times", a.decl.Instance, b.decl.Instance, want)
	}
	if other := (dockerb.Endpoint{Host: "unix:///var/run/docker.sock"}).Instance(); other == want {
		t.Errorf("two endpoints share the instance %q", want)
	}
}

// Several Engines are several registrations: a link to the binary named
// mu-plugin-docker-gpu declares the name docker-gpu and a channel of that
// name (a channel's name is unique among registered plugins), and its
// --context picks its Engine.
func TestNameFollowsTheRegistration(t *testing.T) {
	for argv0, want := range map[string]string{"/x/mu-plugin-docker": "docker", "/x/mu-plugin-docker-gpu": "docker-gpu",
		"mu-plugin-docker-": "docker", "/tmp/docker.test": "docker", "/x/mu-plugin-dockers": "docker"} {
		if got := dockerb.Name(argv0); got != want {
			t.Errorf("Name(%q) = %q, want %q", argv0, got, want)
		}
	}
	proxy, host := startUnixProxy(t)
	store := newContextStore(t, "")
	store.add("gpu", host, false, nil)
	t.Setenv("DOCKER_CONFIG", store.dir)
	link := shortTemp(t) + "/mu-plugin-docker-gpu"
	if err := os.Symlink(binPath(t), link); err != nil {
		t.Fatal(err)
	}
	p := start(t) // mu-plugin-docker: the default name
	if p.decl.Plugin.Name != "docker" || p.decl.Seams.Channel.Name != "docker" {
		t.Errorf("mu-plugin-docker declares %q with channel %q", p.decl.Plugin.Name, p.decl.Seams.Channel.Name)
	}
	q := startAt(t, link, sandboxtest.NewPrefix(), "--context", "gpu")
	d := q.decl
	if d.Plugin.Name != "docker-gpu" || d.Seams.Channel.Name != "docker-gpu" || d.Seams.Job.Channel != "docker-gpu" {
		t.Errorf("mu-plugin-docker-gpu declares %q, channel %q, job.channel %q", d.Plugin.Name, d.Seams.Channel.Name, d.Seams.Job.Channel)
	}
	if err := protocol.ValidateDeclaration(d); err != nil {
		t.Errorf("the declaration breaks a load rule: %v", err)
	}
	if d.Instance == p.decl.Instance {
		t.Errorf("two Engines' registrations share the instance %q", d.Instance)
	}
	before := proxy.conns.Load()
	q.Acquire(t, "key-gpu", nil)
	sandboxtest.Must(t, q, protocol.MethodHostRelease, sandboxtest.KeyParams("key-gpu"))
	if proxy.conns.Load() == before {
		t.Errorf("docker-gpu never used its context's Engine")
	}
}
