//go:build integration

// Package integration is the docker-compose suite: end-to-end flows and
// fault drills on real parts. scripts/integration.sh brings the environment
// up (integration/docker-compose.yml), runs `go test -tags integration`, and
// always tears it down.
package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
)

// Env is the running compose environment as the tests see it.
type Env struct {
	Dir        string // the run's private directory (key, known_hosts, ssh config)
	Project    string // the compose project name
	Key        string // the test user's private key
	KnownHosts string
	SSHConfig  string // Host bastion, host-a and engine-host (direct), host-b and engine-jump (ProxyJump bastion to engine-host)
	Bastion    string // 127.0.0.1:port
	HostA      string // 127.0.0.1:port
	EngineHost string // 127.0.0.1:port of the sshd that reaches the Engine's socket
	Bin        string // the built plugins
}

var (
	envOnce sync.Once
	env     *Env
	envErr  error
)

// The environment must be up: this suite never skips.
func getEnv(t *testing.T) *Env {
	t.Helper()
	envOnce.Do(func() { env, envErr = loadEnv() })
	if envErr != nil {
		t.Fatalf("integration environment: %v (run it through `make integration`)", envErr)
	}
	return env
}

func loadEnv() (*Env, error) {
	e := &Env{Dir: os.Getenv("MU_IT_DIR"), Project: os.Getenv("MU_IT_PROJECT"), Bin: os.Getenv("MU_PLUGINS_BIN")}
	if e.Dir == "" || e.Project == "" || e.Bin == "" {
		return nil, fmt.Errorf("MU_IT_DIR, MU_IT_PROJECT and MU_PLUGINS_BIN must be set")
	}
	e.Key = filepath.Join(e.Dir, "id_ed25519")
	var err error
	if e.Bastion, err = port(e.Project, "bastion"); err != nil {
		return nil, err
	}
	if e.HostA, err = port(e.Project, "host-a"); err != nil {
		return nil, err
	}
	if e.EngineHost, err = port(e.Project, "engine-host"); err != nil {
		return nil, err
	}
	// known_hosts from each container's own host key, read over docker exec.
	var kh strings.Builder
	for _, svc := range []struct{ name, addr string }{{"bastion", e.Bastion}, {"host-a", e.HostA}, {"host-b", "host-b"},
		{"engine-host", e.EngineHost}, {"engine-host", "engine-host"}} {
		pub, err := waitHostKey(e.Project, svc.name)
		if err != nil {
			return nil, err
		}
		host := svc.addr
		if h, p, ok := strings.Cut(svc.addr, ":"); ok {
			host = "[" + h + "]:" + p
		}
		fmt.Fprintf(&kh, "%s %s\n", host, pub)
	}
	e.KnownHosts = filepath.Join(e.Dir, "known_hosts")
	if err := os.WriteFile(e.KnownHosts, []byte(kh.String()), 0o600); err != nil {
		return nil, err
	}
	bh, bp, _ := strings.Cut(e.Bastion, ":")
	ah, ap, _ := strings.Cut(e.HostA, ":")
	eh, ep, _ := strings.Cut(e.EngineHost, ":")
	cfg := fmt.Sprintf(`Host bastion
  HostName %s
  Port %s
Host host-a
  HostName %s
  Port %s
Host host-b
  HostName host-b
  ProxyJump bastion
Host engine-host
  HostName %s
  Port %s
Host engine-jump
  HostName engine-host
  ProxyJump bastion
Host *
  User mu
  IdentityFile %s
  IdentitiesOnly yes
  UserKnownHostsFile %s
  StrictHostKeyChecking yes
  ConnectTimeout 5
`, bh, bp, ah, ap, eh, ep, e.Key, e.KnownHosts)
	e.SSHConfig = filepath.Join(e.Dir, "ssh_config")
	return e, os.WriteFile(e.SSHConfig, []byte(cfg), 0o600)
}

func compose(project string, args ...string) *exec.Cmd {
	if exec.Command("docker", "compose", "version").Run() == nil {
		return exec.Command("docker", append([]string{"compose", "-p", project, "-f", "docker-compose.yml"}, args...)...)
	}
	return exec.Command("docker-compose", append([]string{"-p", project, "-f", "docker-compose.yml"}, args...)...)
}

func port(project, svc string) (string, error) {
	out, err := compose(project, "port", svc, "22").Output()
	if err != nil {
		return "", fmt.Errorf("compose port %s: %v", svc, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// containerID names a service's container.
func containerID(project, svc string) (string, error) {
	out, err := compose(project, "ps", "-q", svc).Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return "", fmt.Errorf("compose ps %s: %v", svc, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func waitHostKey(project, svc string) (string, error) {
	id, err := containerID(project, svc)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var key string
	if waitfor.PollContext(ctx, 200*time.Millisecond, func() bool {
		var out []byte
		if out, err = exec.CommandContext(ctx, "docker", "exec", id, "cat", "/etc/ssh/ssh_host_ed25519_key.pub").Output(); err == nil {
			if f := strings.Fields(string(out)); len(f) >= 2 {
				key = f[0] + " " + f[1]
			}
		}
		return key != ""
	}) {
		return key, nil
	}
	return "", fmt.Errorf("%s: no host key: %v", svc, err)
}

// OpenSSH itself reaches every host with the generated config: the
// environment is what the suite claims it is.
func TestEnvironmentReachable(t *testing.T) {
	e := getEnv(t)
	for _, host := range []string{"host-a", "host-b", "engine-host", "engine-jump"} {
		var out []byte
		var err error
		waitfor.Poll(10*time.Second, func() bool { // sshd may still be starting
			out, err = exec.Command("ssh", "-F", e.SSHConfig, host, "echo ok $(id -un)").CombinedOutput()
			return err == nil
		})
		if err != nil || strings.TrimSpace(string(out)) != "ok mu" {
			t.Fatalf("ssh %s: %v: %s", host, err, out)
		}
	}
	// engine-host's user may open the Engine's socket, as a remote Engine's
	// SSH user must (its group), and has no docker CLI to run.
	out, err := exec.Command("ssh", "-F", e.SSHConfig, "engine-host", "test -r /var/run/docker.sock && test -w /var/run/docker.sock && ! command -v docker && echo ok").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("engine-host: mu cannot open the Engine's socket, or has a docker CLI: %v: %s", err, out)
	}
	// The bastion only allows jumping.
	if out, err := exec.Command("ssh", "-F", e.SSHConfig, "bastion", "echo", "shell").CombinedOutput(); err == nil || strings.Contains(string(out), "shell") {
		t.Fatalf("the bastion ran a command: %s", out)
	}
}
