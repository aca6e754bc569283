//go:build integration

package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/gitrepo"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// TestSSHFlowThroughBastion drives mu-plugin-ssh to host-b, which only the
// bastion reaches (ProxyJump): exec, push, fetch and checkSteps.
func TestSSHFlowThroughBastion(t *testing.T) {
	e := getEnv(t)
	p := startPlugin(t, e.sshPlugin())
	ctx := waitfor.Context(t, 3*time.Minute)
	tg := drive.HostTarget("host-b")
	run := words.RandHex(4)

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
	local, rev := gitrepo.Repo(t, t.TempDir(), "seed "+run)
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
	if parent := gitrepo.Git(t, local, "rev-parse", made+"^"); parent != rev {
		t.Fatalf("the fetched commit's parent is %s, want the pushed %s", parent, rev)
	}

	// checkSteps (reach): every step passes, but tcp, which ProxyJump skips.
	steps, err := caller.Invoke(ctx, p, protocol.MethodLinkCheckSteps, protocol.CheckStepsParams{Base: protocol.Base{Target: tg}, Phase: protocol.PhaseReach})
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

// proxiedConfig writes an ssh_config in which host-b (only the bastion
// reaches it) is reached through two ProxyCommands: `ssh -W` through the
// bastion, and a plain relay (a stream into the bastion's container, as
// cloud CLIs such as SSM or IAP give one). Its host key is the one the
// suite knows under host-b.
func (e *Env) proxiedConfig(t *testing.T) string {
	t.Helper()
	bastion, err := containerID(e.Project, "bastion")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	// The suite's config first (outside any Host block, so it applies to
	// every host): its Host * gives the user, key and known_hosts.
	body := fmt.Sprintf(`Include %[1]s
Host b-via-w
  HostName host-b
  ProxyCommand ssh -F %[1]s -W %%h:%%p bastion
Host b-via-relay
  HostName host-b
  ProxyCommand docker exec -i %[2]s bash -c 'exec 3<>/dev/tcp/$0/$1; cat <&3 & cat >&3; kill $! 2>/dev/null' %%h %%p
`, e.SSHConfig, bastion)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestSSHProxyCommand: host-b through each ProxyCommand, as `ssh` reaches
// it with the same config: exec, fetch, checkSteps naming the route, the
// host key and the key; the debug log (--log-file) holds the route and
// never the canary.
func TestSSHProxyCommand(t *testing.T) {
	e := getEnv(t)
	cfg := e.proxiedConfig(t)
	id, _ := containerID(e.Project, "host-b")
	for _, host := range []string{"b-via-w", "b-via-relay"} {
		t.Run(host, func(t *testing.T) {
			// The host's name on stdout; stderr (the ProxyCommand's own, too)
			// only for the failure's message.
			var stderr strings.Builder
			ssh := exec.Command("ssh", "-F", cfg, host, "hostname")
			ssh.Stderr = &stderr
			if out, err := ssh.Output(); err != nil || !strings.HasPrefix(id, strings.TrimSpace(string(out))) {
				t.Fatalf("ssh %s: %v: %s%s", host, err, out, stderr.String())
			}
			logf := filepath.Join(t.TempDir(), "plugin.log")
			p := startPlugin(t, spec{"ssh", []string{filepath.Join(e.Bin, "mu-plugin-ssh"), "--config", cfg, "--log-file", logf, "--log-level", "debug"}})
			ctx := waitfor.Context(t, 2*time.Minute)
			tg := drive.HostTarget(host)
			res, err := p.Exec(ctx, tg, "hostname", ".", 20*time.Second)
			if err != nil || res.ExitCode == nil || *res.ExitCode != 0 || !strings.HasPrefix(id, strings.TrimSpace(res.Stdout)) {
				t.Fatalf("exec on host-b through %s: %v %+v", host, err, res)
			}
			// A commit made on host-b comes back through the ProxyCommand.
			run := words.RandHex(4)
			res, err = p.Exec(ctx, tg, fmt.Sprintf("set -e; git init -q pc-%[1]s; cd pc-%[1]s; echo x > f; git add f; git commit -qm x; git rev-parse HEAD", run), ".", 30*time.Second)
			if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
				t.Fatalf("commit on host-b: %v %+v", err, res)
			}
			local, _ := gitrepo.Repo(t, t.TempDir(), "local "+run)
			if res, err := p.Fetch(ctx, tg, "pc-"+run, local, 60*time.Second); err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
				t.Fatalf("fetch: %v %+v", err, res)
			}
			if got := fetchHead(t, local); got != strings.TrimSpace(res.Stdout) {
				t.Fatalf("FETCH_HEAD %s, want %s", got, strings.TrimSpace(res.Stdout))
			}
			steps, err := caller.Invoke(ctx, p, protocol.MethodLinkCheckSteps, protocol.CheckStepsParams{Base: protocol.Base{Target: tg}, Phase: protocol.PhaseReach})
			if err != nil {
				t.Fatalf("checkSteps: %v", err)
			}
			detail := map[string]string{}
			for _, s := range steps {
				detail[s.Step] = s.OK.String() + " " + s.Detail
			}
			if !strings.HasPrefix(detail["tcp"], "null the host is reached through its ProxyCommand") ||
				!strings.HasPrefix(detail["hostkey"], "true ssh-ed25519 SHA256:") || !strings.Contains(detail["hostkey"], "ProxyCommand `") ||
				!strings.Contains(detail["auth"], e.Key) {
				t.Errorf("steps: %v", detail)
			}
			_, _ = p.Exec(ctx, tg, "rm -rf pc-"+run, ".", 20*time.Second)
			p.Stop()
			<-p.Done()
			log, _ := os.ReadFile(logf)
			if !strings.Contains(string(log), "executing ProxyCommand") || !strings.Contains(string(log), "msg=authenticated") {
				t.Errorf("the log does not tell the route:\n%s", log)
			}
			if strings.Contains(string(log), canary) {
				t.Errorf("the log file holds the canary")
			}
		})
	}
}

// TestSSHIdentityAgent: the key to host-a is held only by an ssh-agent
// at the config's IdentityAgent path (no key file, no SSH_AUTH_SOCK): the
// plugin authenticates with it, as ssh does.
func TestSSHIdentityAgent(t *testing.T) {
	e := getEnv(t)
	dir := t.TempDir()
	key := filepath.Join(dir, "agent_key")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "mu-it-agent", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	pub, _ := os.ReadFile(key + ".pub")
	a, _ := containerID(e.Project, "host-a")
	add := exec.Command("docker", "exec", "-i", a, "sh", "-c", "cat >> /home/mu/.ssh/authorized_keys")
	add.Stdin = strings.NewReader(string(pub))
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("authorizing the agent key: %v: %s", err, out)
	}
	sock := testsshd.Agent(t, key)
	os.Remove(key)
	ah, ap, _ := strings.Cut(e.HostA, ":")
	cfg := filepath.Join(dir, "ssh_config")
	os.WriteFile(cfg, []byte(fmt.Sprintf("Host a-agent\n  HostName %s\n  Port %s\n  User mu\n  IdentityFile none\n  IdentityAgent %s\n"+
		"  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n", ah, ap, sock, e.KnownHosts)), 0o600)
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SSH_AUTH_SOCK=") {
			env = append(env, kv)
		}
	}
	sshCmd := exec.Command("ssh", "-F", cfg, "a-agent", "echo ok")
	sshCmd.Env = env
	if out, err := sshCmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("ssh with the agent: %v: %s", err, out)
	}
	t.Setenv("SSH_AUTH_SOCK", "")
	p := startPlugin(t, spec{"ssh", []string{filepath.Join(e.Bin, "mu-plugin-ssh"), "--config", cfg}})
	ctx := waitfor.Context(t, time.Minute)
	steps, err := caller.Invoke(ctx, p, protocol.MethodLinkCheckSteps, protocol.CheckStepsParams{Base: protocol.Base{Target: drive.HostTarget("a-agent")}, Phase: protocol.PhaseReach})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s.Step == "auth" && (s.OK.String() != "true" || !strings.Contains(s.Detail, "agent key ED25519") || !strings.Contains(s.Detail, "mu-it-agent")) {
			t.Fatalf("auth step: %s %s", s.OK, s.Detail)
		}
	}
}

// TestSSHFirstContact: host-a has ed25519, ECDSA and RSA host keys. On
// first contact the plugin shows the fingerprint ssh shows, and its
// accept-new records the key ssh records.
func TestSSHFirstContact(t *testing.T) {
	e := getEnv(t)
	dir := t.TempDir()
	ah, ap, _ := strings.Cut(e.HostA, ":")
	config := func(strict, kh string) string {
		cfg := filepath.Join(dir, strict+"-config")
		os.WriteFile(cfg, []byte(fmt.Sprintf("Host a-new\n  HostName %s\n  Port %s\n  User mu\n  IdentityFile %s\n  IdentitiesOnly yes\n"+
			"  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking %s\n", ah, ap, e.Key, kh, strict)), 0o600)
		return cfg
	}
	sshKH, pluginKH := filepath.Join(dir, "ssh_kh"), filepath.Join(dir, "plugin_kh")
	if out, err := exec.Command("ssh", "-F", config("accept-new", sshKH), "a-new", "true").CombinedOutput(); err != nil {
		t.Fatalf("ssh: %v: %s", err, out)
	}
	recorded, _ := os.ReadFile(sshKH)
	f := strings.Fields(string(recorded))
	if len(f) != 3 {
		t.Fatalf("ssh recorded %q", recorded)
	}
	pubFile := filepath.Join(dir, "k.pub")
	os.WriteFile(pubFile, []byte(f[1]+" "+f[2]+"\n"), 0o600)
	out, err := exec.Command("ssh-keygen", "-l", "-f", pubFile).Output()
	if err != nil {
		t.Fatal(err)
	}
	fp := strings.Fields(string(out))[1]

	p := startPlugin(t, spec{"ssh", []string{filepath.Join(e.Bin, "mu-plugin-ssh"), "--config", config("yes", pluginKH)}})
	ctx := waitfor.Context(t, time.Minute)
	_, err = p.Exec(ctx, drive.HostTarget("a-new"), "true", ".", 20*time.Second)
	var re *caller.RemoteError
	if !errors.As(err, &re) || re.Kind != protocol.Human || !strings.Contains(re.Remedy, fp) || !strings.Contains(re.Remedy, "ssh-keyscan -t ed25519 -p "+ap) {
		t.Fatalf("want a hand-back showing ssh's %s and its key type, got %v", fp, err)
	}
	p2 := startPlugin(t, spec{"ssh", []string{filepath.Join(e.Bin, "mu-plugin-ssh"), "--config", config("accept-new", pluginKH)}})
	if res, err := p2.Exec(ctx, drive.HostTarget("a-new"), "true", ".", 20*time.Second); err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("accept-new: %v %+v", err, res)
	}
	if got, _ := os.ReadFile(pluginKH); string(got) != string(recorded) {
		t.Fatalf("the plugin recorded %q, ssh %q", got, recorded)
	}
}
