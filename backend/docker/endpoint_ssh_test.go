package docker_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dockerb "github.com/mu-org/mu-plugins/backend/docker"
	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/panes"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// An ssh:// endpoint against a real OpenSSH sshd on 127.0.0.1
// (internal/testsshd): the "remote" Engine is this machine's, reached only
// through the SSH connection (direct-streamlocal to its socket).

// sshEndpoint is an sshd and the DOCKER_HOST and flags that reach an
// Engine socket through it.
type sshEndpoint struct {
	srv   *testsshd.Server
	host  string   // DOCKER_HOST: ssh://USER@127.0.0.1:PORT[PATH]
	flags []string // --ssh-config (empty: nothing of the machine's own), --ssh-known-hosts, --ssh-identity
}

// newSSHEndpoint starts an sshd with o; the endpoint names socket (""
// leaves the default, /var/run/docker.sock).
func newSSHEndpoint(t testing.TB, o testsshd.Options, socket string) sshEndpoint {
	t.Helper()
	s := testsshd.Start(t, o)
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return sshEndpoint{srv: s, host: fmt.Sprintf("ssh://%s@127.0.0.1:%d%s", s.User, s.Port, socket),
		flags: []string{"--ssh-config", cfg, "--ssh-known-hosts", s.KnownHosts, "--ssh-identity", s.UserKey}}
}

// slowSessions is an sshd_config line that makes every session wait 3 s
// (longer than ReachTimeout) before it runs its command.
const slowSessions = `ForceCommand sleep 3; eval "$SSH_ORIGINAL_COMMAND"`

func (e sshEndpoint) env() map[string]string {
	return map[string]string{"DOCKER_HOST": e.host, "DOCKER_CONTEXT": "", "DOCKER_TLS_VERIFY": "", "DOCKER_TLS": ""}
}

// The whole host flow over an ssh:// endpoint whose path names the socket
// (a relay in front of the Engine that counts connections): every Engine
// call, the pooled exec channels (six at once, on a server whose
// MaxSessions is 2: they are channels, not sessions) and git's bridge go
// through it, all over the plugin's one SSH connection (the bridge, a
// process of its own, through a socket the plugin serves for the call's
// length, gone after it). Host check names the endpoint and the SSH route,
// the instance derives from the address as for any endpoint, and the log
// says where it connected.
func TestSSHEndpoint(t *testing.T) {
	proxy, sock := startUnixProxy(t)
	e := newSSHEndpoint(t, testsshd.Options{Root: true, MaxSessions: 2}, strings.TrimPrefix(sock, "unix://"))
	logFile := filepath.Join(t.TempDir(), "plugin.log")
	env := e.env()
	env["TMPDIR"] = t.TempDir() // where the bridge's socket lives, for the call only
	p := startEnv(t, env, append(e.flags, "--log-file", logFile, "--log-level", "info")...)
	if want := (dockerb.Endpoint{Host: e.host}).Instance(); p.decl.Instance != want {
		t.Errorf("instance %q, want %q (from the address)", p.decl.Instance, want)
	}
	if n := e.srv.Logins(); n != 0 {
		t.Errorf("%d SSH logins before the first call: the handshake must not dial", n)
	}
	hostFlow(t, p, "key-ssh") // acquire, exec, push (the bridge), release
	if proxy.conns.Load() == 0 {
		t.Fatalf("nothing went through the socket the endpoint names")
	}
	if left, _ := os.ReadDir(env["TMPDIR"]); len(left) != 0 {
		t.Errorf("the bridge's socket outlived its call: %v", left)
	}

	h := p.Acquire(t, "key-ssh-pool", nil).Handle
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ { // six exec channels at once, each a channel of the one connection
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := sandboxtest.Ask(t, p, protocol.MethodLinkExec, sandboxtest.ExecParams(h, fmt.Sprintf("sleep 0.3; echo %d", i), ".", 60_000)); err != nil || r.Stdout != fmt.Sprintf("%d\n", i) {
				t.Errorf("exec %d: %v %+v", i, err, r)
			}
		}()
	}
	wg.Wait()
	if n := e.srv.Logins(); n != 1 {
		t.Errorf("%d SSH logins, want 1: the plugin's one connection carries everything, git's bridge included", n)
	}

	steps := reachSteps(t, p, h)
	if s := steps["endpoint"]; s.OK != protocol.StepPassed || !strings.Contains(s.Detail, e.host) || !strings.Contains(s.Detail, "DOCKER_HOST") {
		t.Errorf("endpoint step: %+v", s)
	}
	s := steps["ssh"]
	for _, want := range []string{"root@127.0.0.1", "host key ssh-ed25519", e.srv.KnownHosts, "authenticated with " + e.srv.UserKey, strings.TrimPrefix(sock, "unix://")} {
		if s.OK != protocol.StepPassed || !strings.Contains(s.Detail, want) {
			t.Errorf("ssh step lacks %q: %+v", want, s)
		}
	}
	for _, name := range []string{"ping", "api", "image", "container", "git"} {
		if steps[name].OK != protocol.StepPassed {
			t.Errorf("%s step: %+v", name, steps[name])
		}
	}
	sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("key-ssh-pool"))
	p.Stop(t)
	log, _ := os.ReadFile(logFile)
	if !strings.Contains(string(log), "connected to the Docker endpoint over SSH") || !strings.Contains(string(log), e.host) {
		t.Errorf("the log does not say where it connected:\n%s", log)
	}
}

// A job over an ssh:// endpoint chosen by a context (its store in a
// temporary DOCKER_CONFIG, --context naming it, the host an ssh_config
// alias): job.start, the view in a local pane (mu-plugin-docker view,
// pinned to the endpoint and its SSH settings by its environment: it can
// only log in with the pinned known_hosts and key), readiness, a send and
// its watch, job.stop, and the view seeing the end.
func TestSSHEndpointJobAndView(t *testing.T) {
	ctx := waitfor.Context(t, 5*time.Minute)
	s := testsshd.Start(t, testsshd.Options{Root: true, Alias: "engine"})
	store := newContextStore(t, "")
	store.add("remote", "ssh://engine", false, nil)
	testimage.Ensure(t)
	cfg := callerConfig(t)
	cfg.Argv = append(cfg.Argv, "--context", "remote", "--ssh-config", s.Config)
	cfg.Env = []string{"DOCKER_CONFIG=" + store.dir, "DOCKER_HOST=", "DOCKER_CONTEXT="}
	p, err := caller.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("starting the plugin: %v", err)
	}
	t.Cleanup(func() { p.Stop() })
	host := spawnHost(t, ctx, p)

	key, name := "job-"+sandboxtest.NewPrefix(), "remote"
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: key,
		Spec: jobSpec(name, ".", map[string]string{"MU_TEST_AGENT_MS": "100"})})

	if err != nil {
		t.Fatalf("job.start: %v", err)
	}
	v := res.View
	if v.Env["DOCKER_CONTEXT"] != "remote" || v.Env["DOCKER_CONFIG"] != store.dir || v.Env["MU_DOCKER_SSH_CONFIG"] != s.Config {
		t.Fatalf("the view's environment does not pin the endpoint: %v", v.Env)
	}
	jt := drive.JobTarget(host, "docker", key, res.Handle, "ws", name)
	tm := panes.NewPanes(t)
	tm.Open(t, "sshview", v.Command, v.Env)
	tm.Shows(t, "sshview", "mu test agent: ready")
	drive.Baseline(t, ctx, p, jt)
	if _, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: "over ssh", MsgID: "m1", Mode: protocol.ModeFollowUp}); err != nil {
		t.Fatalf("channel.send: %v", err)
	}
	if o := drive.Settled(t, ctx, p, jt, 0); o.Runs != 1 || o.LastText != "agent: over ssh" {
		t.Fatalf("the settled turn: %+v", o)
	}
	tm.Shows(t, "sshview", "[settled turn 1]")
	if _, err := caller.Invoke(ctx, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: key}); err != nil {
		t.Fatalf("job.stop: %v", err)
	}
	tm.Shows(t, "sshview", "[mu: the job")
	if n := s.Logins(); n < 2 {
		t.Errorf("%d SSH logins: the plugin and the view each log in", n)
	}
}

// What goes wrong on the far side is said plainly: a user outside the
// socket's group (human, naming the group and usermod), a socket that is
// not there (retryable: the Engine is not running there), an sshd that
// does not allow unix sockets over SSH (human), an unknown host key and a
// refused key (the SSH layer's hand-backs, naming this plugin's --ssh-*
// flags), a host that does not answer (retryable; the plugin still loads).
// Nothing is created in any case. The cause is said however slow the far
// side: the SSH channel to the socket and the look at a refused one are
// bounded by the call, not by the Engine ping's ReachTimeout (issue 29).
func TestSSHEndpointErrors(t *testing.T) {
	type want struct {
		kind     string
		msg      []string
		remedy   []string
		sshStep  protocol.StepOK // the ssh step; when it passes, ping fails
		failStep string
	}
	empty := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stranger := filepath.Join(t.TempDir(), "stranger")
	testsshd.KeyGen(t, stranger, "ed25519", "")
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	cases := []struct {
		name string
		opts testsshd.Options
		path string
		edit func(e *sshEndpoint)
		want want
	}{
		{"not-in-the-group", testsshd.Options{}, "", nil, want{"human",
			[]string{"permission denied", testsshd.TestUser, "docker.sock"}, []string{"usermod -aG docker " + testsshd.TestUser, "ssh -O exit"}, protocol.StepPassed, "ping"}},
		{"no-socket", testsshd.Options{Root: true}, "/nonexistent/docker.sock", nil, want{"retryable",
			[]string{"/nonexistent/docker.sock does not exist"}, []string{"start the Docker Engine"}, protocol.StepPassed, "ping"}},
		{"forwarding-off", testsshd.Options{Root: true, Extra: []string{"AllowStreamLocalForwarding no"}}, "", nil, want{"human",
			[]string{"refused to open its socket"}, []string{"AllowStreamLocalForwarding"}, protocol.StepPassed, "ping"}},
		// A far side slower than the ping's budget (each session waits 3 s
		// before its command, longer than ReachTimeout): the cause still wins.
		{"no-socket-slow-host", testsshd.Options{Root: true, Extra: []string{slowSessions}}, "/nonexistent/docker.sock", nil, want{"retryable",
			[]string{"/nonexistent/docker.sock does not exist"}, []string{"start the Docker Engine"}, protocol.StepPassed, "ping"}},
		{"forwarding-off-slow-host", testsshd.Options{Root: true, Extra: []string{"AllowStreamLocalForwarding no", slowSessions}}, "", nil, want{"human",
			[]string{"refused to open its socket"}, []string{"AllowStreamLocalForwarding"}, protocol.StepPassed, "ping"}},
		{"unknown-host-key", testsshd.Options{Root: true}, "", func(e *sshEndpoint) { e.flags[3] = empty }, want{"human",
			[]string{"the Docker endpoint", "host key"}, []string{"known_hosts"}, protocol.StepFailed, "ssh"}},
		{"refused-key", testsshd.Options{Root: true}, "", func(e *sshEndpoint) {
			e.flags[5] = stranger
			e.flags = append(e.flags, "--ssh-option", "IdentitiesOnly=yes", "--ssh-option", "IdentityAgent=none")
		}, want{"human", []string{"refused the keys"}, []string{"--ssh-identity"}, protocol.StepFailed, "ssh"}},
		{"option-refused", testsshd.Options{Root: true}, "", func(e *sshEndpoint) { e.flags = append(e.flags, "--ssh-option", "CheckHostIP=yes") },
			want{"human", []string{"(--ssh-option CheckHostIP=yes)"}, []string{"`--ssh-option CheckHostIP=…`"}, protocol.StepFailed, "ssh"}},
		{"host-down", testsshd.Options{Root: true}, "", func(e *sshEndpoint) { e.host = fmt.Sprintf("ssh://root@127.0.0.1:%d", closedPort) },
			want{"retryable", []string{"cannot reach"}, nil, protocol.StepFailed, "ssh"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newSSHEndpoint(t, c.opts, c.path)
			if c.edit != nil {
				c.edit(&e)
			}
			p := startEnv(t, e.env(), e.flags...)
			key := "key-ssh-" + c.name
			err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams(key, nil))
			if err == nil || string(err.Kind) != c.want.kind {
				t.Fatalf("acquire: %v, want %s", err, c.want.kind)
			}
			t.Logf("%s: %s (remedy: %s)", err.Kind, err.Message, err.Remedy)
			for _, w := range append(c.want.msg, e.host) {
				if !strings.Contains(strings.ToLower(err.Message), strings.ToLower(w)) {
					t.Errorf("message %q lacks %q", err.Message, w)
				}
			}
			for _, w := range c.want.remedy {
				if !strings.Contains(err.Remedy, w) {
					t.Errorf("remedy %q lacks %q", err.Remedy, w)
				}
			}
			if c.want.kind == "retryable" {
				lk := p.Lookup(t, key, false)
				if lk.Unknown == "" {
					t.Errorf("lookup with the Engine out of reach: %+v, want unknown", lk)
				}
			}
			steps := reachSteps(t, p, "")
			if s := steps["ssh"]; s.OK != c.want.sshStep {
				t.Errorf("ssh step: %+v", s)
			}
			if s := steps[c.want.failStep]; s.OK != protocol.StepFailed || !strings.Contains(s.Detail, "remedy") {
				t.Errorf("%s step: %+v", c.want.failStep, s)
			}
			if s := steps["git"]; s.OK != protocol.StepSkipped {
				t.Errorf("git step after a failure: %+v", s)
			}
			if n := len(labelled("org.mu-plugins.key=" + key)); n != 0 {
				t.Errorf("%d containers made", n)
			}
		})
	}
}

// An ssh:// endpoint the plugin cannot use stops it at start, before the
// handshake, with a message that does not repeat a password.
func TestSSHEndpointRefusedAtStart(t *testing.T) {
	for host, want := range map[string]string{
		"ssh://me:hunter2@gpu.invalid": "password",
		"ssh://me@gpu.invalid?x=1":     "query",
		"ssh://":                       "without a host",
	} {
		t.Setenv("DOCKER_HOST", host)
		p := drive.StartRaw(t, pluginConfig(binPath(t), sandboxtest.NewPrefix())) // it refuses before a handshake
		<-p.Done()
		if out := p.Stderr.String(); !strings.Contains(out, want) || strings.Contains(out, "hunter2") {
			t.Errorf("DOCKER_HOST=%s: stderr %q, want %q and no password", host, out, want)
		}
	}
}

// The SSH connection drops (a relay between the plugin and sshd is cut):
// the next calls make a new one. A call caught by the cut may fail, as mu
// sees a broken link (retryable, or unknown-outcome for a run that may
// have started), never as a hand-back; within mu's three retries a call
// succeeds on a new connection.
func TestSSHEndpointRedials(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{Root: true})
	relay := startTCPRelay(t, s.Addr())
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(fmt.Sprintf("[127.0.0.1]:%d %s\n", relay.port(), s.HostKeyPub)), 0o600); err != nil {
		t.Fatal(err)
	}
	e := sshEndpoint{srv: s, host: fmt.Sprintf("ssh://root@127.0.0.1:%d", relay.port()),
		flags: []string{"--ssh-config", "/dev/null", "--ssh-known-hosts", kh, "--ssh-identity", s.UserKey}}
	p := startEnv(t, e.env(), e.flags...)
	h := p.Acquire(t, "key-ssh-redial", nil).Handle
	if r := p.Run(t, h, "echo before"); r.Stdout != "before\n" {
		t.Fatalf("exec: %+v", r)
	}
	for cut := 1; cut <= 2; cut++ {
		relay.cut()
		ok := false
		for try := 0; try < 3 && !ok; try++ {
			var r protocol.ExecResult
			r, err := sandboxtest.Ask(t, p, protocol.MethodLinkExec, sandboxtest.ExecParams(h, "echo after", ".", 60_000))
			switch {
			case err == nil:
				ok = r.Stdout == "after\n"
			case err.Kind != "retryable" && err.Kind != "unknown-outcome":
				t.Fatalf("exec after cut %d: %v", cut, err)
			}
		}
		if !ok {
			t.Fatalf("no exec succeeded within 3 tries after cut %d", cut)
		}
	}
	if n := relay.conns.Load(); n != 3 {
		t.Errorf("%d SSH connections, want 3 (one, and one after each cut)", n)
	}
	sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("key-ssh-redial"))
}

// The socket look travels inside single quotes on the remote command line.
func TestSocketScriptHasNoSingleQuote(t *testing.T) {
	b, err := os.ReadFile("scripts/ssh-socket.sh")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "'") {
		t.Fatalf("scripts/ssh-socket.sh holds a single quote: it would end the quoted command line")
	}
}

// PinEnv pins an ssh:// endpoint for the sub-commands with its SSH
// settings, whatever their own environment says (a context's, and
// DOCKER_HOST's); pinned options keep their order. The URL is read as the
// docker CLI reads it: its path is the remote socket.
func TestPinEnvCarriesTheSSHSettings(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for _, f := range []string{"config", "known_hosts", "key", "other"} {
		files[f] = filepath.Join(dir, f)
		if err := os.WriteFile(files[f], nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	store := newContextStore(t, "")
	store.add("gpu", "ssh://me@gpu.example:2222/run/user/1000/docker.sock", false, nil)
	flags := dockerb.SSHFlags{Config: files["config"], KnownHosts: files["known_hosts"], Identity: files["key"],
		Options: []string{"ConnectTimeout=3", "ServerAliveInterval=5"}}
	hostile := map[string]string{"DOCKER_HOST": "unix:///tmp/elsewhere.sock", "DOCKER_CONTEXT": "nope", "DOCKER_CONFIG": t.TempDir(),
		"MU_DOCKER_SSH_CONFIG": files["other"], "MU_DOCKER_SSH_OPTIONS": "User=mallory", "MU_DOCKER_SSH_IDENTITY": files["other"]}
	for _, c := range []struct {
		flag string
		env  map[string]string
	}{
		{"", map[string]string{"DOCKER_CONFIG": store.dir, "DOCKER_HOST": "ssh://me@gpu.example"}},
		{"gpu", map[string]string{"DOCKER_CONFIG": store.dir}},
	} {
		ep, err := dockerb.ResolveEndpoint(c.flag, func(k string) string { return c.env[k] })
		if err == nil {
			err = ep.UseSSH(flags)
		}
		if err != nil {
			t.Fatal(err)
		}
		env := pinnedOver(hostile, ep, c.env)
		again, err := dockerb.PinnedEndpoint(func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("resolving the pinned env %v: %v", env, err)
		}
		if again.Host != ep.Host || again.Context != ep.Context || again.SSH.Config != flags.Config || again.SSH.KnownHosts != flags.KnownHosts ||
			again.SSH.Identity != flags.Identity || strings.Join(again.SSH.Options, ",") != "ConnectTimeout=3,ServerAliveInterval=5" {
			t.Errorf("%q %v: pinned %+v resolves %+v", c.flag, c.env, ep, again)
		}
	}
	var e dockerb.Endpoint
	if err := e.UseSSH(dockerb.SSHFlags{Options: []string{"Bogus=1"}}); err == nil || !strings.Contains(err.Error(), "--ssh-option") {
		t.Errorf("an unknown --ssh-option: %v", err)
	}
	if err := e.UseSSH(dockerb.SSHFlags{KnownHosts: filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), "--ssh-known-hosts") {
		t.Errorf("a missing --ssh-known-hosts: %v", err)
	}
}

// Through a running ControlMaster (the ssh_config's ControlPath, started by
// `ssh -M` beforehand): the whole host flow, several exec channels at once
// included, goes through the master, so the server sees no login but the
// master's; the ssh step names the master.
func TestSSHEndpointThroughAControlMaster(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{Root: true})
	ctl := filepath.Join(shortTemp(t), "ctl")
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, []byte(s.HostBlock("engine")+"  ControlMaster auto\n  ControlPath "+ctl+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	master := exec.Command("ssh", "-F", cfg, "-M", "-S", ctl, "-N", "-o", "ControlPersist=no", "engine")
	if err := master.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = master.Process.Kill(); _ = master.Wait() })
	if !waitfor.Poll(20*time.Second, func() bool { return exec.Command("ssh", "-F", cfg, "-S", ctl, "-O", "check", "engine").Run() == nil }) {
		t.Fatal("the ControlMaster never answered")
	}
	p := startEnv(t, map[string]string{"DOCKER_HOST": "ssh://engine", "DOCKER_CONTEXT": ""}, "--ssh-config", cfg)
	hostFlow(t, p, "key-ssh-master")
	h := p.Acquire(t, "key-ssh-master-pool", nil).Handle
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := sandboxtest.Ask(t, p, protocol.MethodLinkExec, sandboxtest.ExecParams(h, fmt.Sprintf("sleep 0.2; echo %d", i), ".", 60_000)); err != nil || r.Stdout != fmt.Sprintf("%d\n", i) {
				t.Errorf("exec %d: %v %+v", i, err, r)
			}
		}()
	}
	wg.Wait()
	if s := reachSteps(t, p, h)["ssh"]; s.OK != protocol.StepPassed || !strings.Contains(s.Detail, "ControlMaster") {
		t.Errorf("ssh step: %+v", s)
	}
	sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("key-ssh-master-pool"))
	if n := s.Logins(); n != 1 {
		t.Errorf("%d SSH logins, want the master's alone", n)
	}
}

// --ssh-* flags with an endpoint that is not ssh:// are unused, and the log
// says so.
func TestSSHFlagsWithAnotherEndpoint(t *testing.T) {
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "plugin.log")
	p := startEnv(t, map[string]string{"DOCKER_HOST": "unix://" + engineSocket()}, "--ssh-known-hosts", kh, "--log-file", logFile)
	p.Stop(t)
	if log, _ := os.ReadFile(logFile); !strings.Contains(string(log), "--ssh-* flags are for an ssh:// endpoint: unused") {
		t.Errorf("the log does not say the --ssh-* flags are unused:\n%s", log)
	}
}
