package docker_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/protocol"
)

// BenchmarkSSHExecTrue compares link.exec of `true` over an ssh:// endpoint
// (a real sshd on 127.0.0.1 as root, the Engine's socket opened over the
// plugin's one SSH connection) with `docker -H ssh://… exec CTR true`, the
// docker CLI's own ssh helper (it runs `ssh … docker system dial-stdio` for
// each connection it makes, so the far side needs the docker CLI: here the
// machine's own), cold and through a ControlMaster. The CLI's `ssh` is
// OpenSSH reading the benchmark's config (a PATH shim adding -F).
func BenchmarkSSHExecTrue(b *testing.B) {
	s := testsshd.Start(b, testsshd.Options{Root: true})
	host := fmt.Sprintf("ssh://root@127.0.0.1:%d", s.Port)
	p := startEnv(b, map[string]string{"DOCKER_HOST": host, "DOCKER_CONTEXT": ""},
		"--ssh-config", "/dev/null", "--ssh-known-hosts", s.KnownHosts, "--ssh-identity", s.UserKey)
	h := p.Acquire(b, "bench-ssh-exec", nil).Handle
	b.Run("plugin", func(b *testing.B) {
		for b.Loop() {
			if r := p.Run(b, h, "true"); sandboxtest.ExitCode(r) != "0" {
				b.Fatalf("exec: %+v", r)
			}
		}
	})
	for _, peer := range []struct{ name, extra string }{
		{"docker-cli-ssh", ""},
		{"docker-cli-ssh-controlmaster", "  ControlMaster auto\n  ControlPath DIR/cm-%C\n  ControlPersist 120\n"},
	} {
		path := sshShim(b, s, peer.extra)
		b.Run(peer.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("docker", "exec", h, "true")
				cmd.Env = append(os.Environ(), "PATH="+path, "DOCKER_HOST="+host)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("docker -H %s exec: %v: %s", host, err, out)
				}
			}
		})
	}
}

// BenchmarkSSHExecTrueCold is the same as each mu invocation sees it: a
// fresh plugin (start, handshake, the SSH login, the Engine's ping, an
// exec channel, `true`, stop) against one `docker -H ssh://… exec CTR true`.
func BenchmarkSSHExecTrueCold(b *testing.B) {
	s := testsshd.Start(b, testsshd.Options{Root: true})
	host := fmt.Sprintf("ssh://root@127.0.0.1:%d", s.Port)
	flags := []string{"--ssh-config", "/dev/null", "--ssh-known-hosts", s.KnownHosts, "--ssh-identity", s.UserKey}
	first := startEnv(b, map[string]string{"DOCKER_HOST": host, "DOCKER_CONTEXT": ""}, flags...)
	h := first.Acquire(b, "bench-ssh-cold", nil).Handle
	b.Run("plugin", func(b *testing.B) {
		for b.Loop() {
			p := startOn(b, first.prefix, flags...)
			if r := p.Run(b, h, "true"); sandboxtest.ExitCode(r) != "0" {
				b.Fatalf("exec: %+v", r)
			}
			p.Stop(b)
		}
	})
	path := sshShim(b, s, "")
	b.Run("docker-cli-ssh", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("docker", "exec", h, "true")
			cmd.Env = append(os.Environ(), "PATH="+path, "DOCKER_HOST="+host)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("docker -H %s exec: %v: %s", host, err, out)
			}
		}
	})
}

// sshShim is a PATH whose `ssh` is OpenSSH with a config of its own for
// s (extra appended to its Host block, DIR in it the shim's directory); a ControlMaster it starts is
// stopped when the benchmark ends.
func sshShim(b *testing.B, s *testsshd.Server, extra string) string {
	b.Helper()
	dir := shortTemp(b)
	cfg := filepath.Join(dir, "ssh_config")
	body := fmt.Sprintf("Host 127.0.0.1\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n%s",
		s.UserKey, s.KnownHosts, strings.ReplaceAll(extra, "DIR", dir))
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		b.Fatal(err)
	}
	real, err := exec.LookPath("ssh")
	if err != nil {
		b.Fatal(err)
	}
	shim := "#!/bin/sh\nexec " + real + " -F " + cfg + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "ssh"), []byte(shim), 0o755); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = exec.Command(real, "-F", cfg, "-p", fmt.Sprint(s.Port), "-O", "exit", "127.0.0.1").Run()
	})
	return dir + ":" + os.Getenv("PATH")
}

// BenchmarkSSHFetch measures link.fetch (git fetch through the bridge) over
// an ssh:// endpoint and over the Engine's socket, on one small repository:
// the bridge's Engine connections ride on the plugin's SSH connection, so
// the two should be alike.
func BenchmarkSSHFetch(b *testing.B) {
	s := testsshd.Start(b, testsshd.Options{Root: true})
	for _, c := range []struct {
		name  string
		host  string
		flags []string
	}{
		{"unix", "unix://" + engineSocket(), nil},
		{"ssh", fmt.Sprintf("ssh://root@127.0.0.1:%d", s.Port), []string{"--ssh-config", "/dev/null", "--ssh-known-hosts", s.KnownHosts, "--ssh-identity", s.UserKey}},
	} {
		p := startEnv(b, map[string]string{"DOCKER_HOST": c.host, "DOCKER_CONTEXT": ""}, c.flags...)
		h := p.Acquire(b, "bench-fetch-"+c.name, nil).Handle
		local, rev := sandboxtest.LocalRepo(b, 1)
		sandboxtest.Must(b, p, protocol.MethodLinkPush, sandboxtest.PushParams(h, local, "repo", rev))
		p.Run(b, h, "git -C repo update-ref HEAD "+rev)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				var r protocol.ExecResult
				if r = sandboxtest.Must(b, p, protocol.MethodLinkFetch, sandboxtest.FetchParams(h, local, "repo")); sandboxtest.ExitCode(r) != "0" {
					b.Fatalf("fetch: %+v", r)
				}
			}
		})
	}
}
