package ssh

// Side by side against the same sshd, in one run:
//   go test -run '^$' -bench . -benchtime 20x ./backend/ssh/

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/crashdrill"
	"github.com/mu-org/mu-plugins/internal/testutil/gitrepo"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
)

func openssh(b *testing.B, s *testsshd.Server, extra ...string) {
	args := append([]string{"-F", s.Config}, extra...)
	args = append(args, "box", "true")
	if out, err := exec.Command("ssh", args...).CombinedOutput(); err != nil {
		b.Fatalf("ssh: %v: %s", err, out)
	}
}

// controlMaster starts `ssh -M` for s and returns its control socket.
func controlMaster(b *testing.B, s *testsshd.Server) string {
	ctl := filepath.Join(b.TempDir(), "ctl")
	cmd := exec.Command("ssh", "-F", s.Config, "-M", "-S", ctl, "-N", "box")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitfor.Eventually(b, "the ControlMaster socket", func() bool { _, err := os.Stat(ctl); return err == nil })
	return ctl
}

// coldPlugin is one cold call: a fresh plugin process, the handshake, one
// `link.exec` of `true`, stdin EOF, exit.
func coldPlugin(b testing.TB, cfg string) {
	d := subproc(b, nil, "--config", cfg)
	d.mustExec("box", "true")
	d.CloseStdin()
}

// sshTrue runs `ssh -F cfg box true`.
func sshTrue(b testing.TB, cfg string, extra ...string) {
	args := append(append([]string{"-F", cfg}, extra...), "box", "true")
	if out, err := exec.Command("ssh", args...).CombinedOutput(); err != nil {
		b.Fatalf("ssh: %v: %s", err, out)
	}
}

func BenchmarkCold(b *testing.B) {
	s, cfg := server(b, testsshd.Options{})
	b.Run("plugin", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			coldPlugin(b, cfg.SSHConfig)
		}
	})
	b.Run("openssh", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			openssh(b, s, "-o", "ControlMaster=no", "-o", "ControlPath=none")
		}
	})
}

// proxyConfig is s's Host block reached through a relay ProxyCommand.
func proxyConfig(b testing.TB, s *testsshd.Server) string {
	return testsshd.WriteConfig(b, s.HostBlock("box")+"  ControlPath none\n  ProxyCommand busybox nc %h %p\n")
}

// BenchmarkColdProxyCommand: a cold call through a ProxyCommand, against
// ssh with the same ProxyCommand.
func BenchmarkColdProxyCommand(b *testing.B) {
	s := testsshd.Start(b, testsshd.Options{})
	coldPair(b, proxyConfig(b, s))
}

// coldPair runs a cold plugin call and `ssh … true` with the same config.
func coldPair(b *testing.B, cfg string) {
	b.Run("plugin", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			coldPlugin(b, cfg)
		}
	})
	b.Run("openssh", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sshTrue(b, cfg)
		}
	})
}

// BenchmarkWarmProxyCommand: link.exec on an open connection through a
// ProxyCommand relay, against ssh through a ControlMaster that itself runs
// over the same ProxyCommand.
func BenchmarkWarmProxyCommand(b *testing.B) {
	s := testsshd.Start(b, testsshd.Options{})
	cfg := proxyConfig(b, s)
	b.Run("plugin", func(b *testing.B) {
		d := subproc(b, nil, "--config", cfg)
		d.mustExec("box", "true")
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			d.mustExec("box", "true")
		}
	})
	b.Run("openssh-controlmaster", func(b *testing.B) {
		ctl := filepath.Join(b.TempDir(), "ctl")
		testsshd.StartMaster(b, cfg, ctl, "box")
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			sshTrue(b, cfg, "-S", ctl)
		}
	})
}

// BenchmarkColdThroughMaster: a cold plugin call (a fresh process, as every
// mu invocation starts one) through a running ControlMaster, against ssh
// through the same master.
func BenchmarkColdThroughMaster(b *testing.B) {
	s := testsshd.Start(b, testsshd.Options{})
	ctl := filepath.Join(b.TempDir(), "ctl")
	cfg := testsshd.WriteConfig(b, s.HostBlock("box")+"  ControlPath "+ctl+"\n")
	testsshd.StartMaster(b, cfg, ctl, "box")
	coldPair(b, cfg)
}

func BenchmarkWarm(b *testing.B) {
	s, cfg := server(b, testsshd.Options{})
	b.Run("plugin", func(b *testing.B) {
		d := subproc(b, nil, "--config", cfg.SSHConfig)
		d.mustExec("box", "true")
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			d.mustExec("box", "true")
		}
	})
	b.Run("openssh-controlmaster", func(b *testing.B) {
		ctl := controlMaster(b, s)
		openssh(b, s, "-S", ctl)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			openssh(b, s, "-S", ctl)
		}
	})
}

func BenchmarkConcurrent50(b *testing.B) {
	_, cfg := server(b, testsshd.Options{})
	d := subproc(b, nil, "--config", cfg.SSHConfig)
	d.mustExec("box", "true")
	failed := 0
	var mu sync.Mutex
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		crashdrill.Parallel(50, func(int) {
			res, r := d.exec("box", "true", ".", 60*time.Second)
			if r != nil || res.ExitCode == nil || *res.ExitCode != 0 {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		})
	}
	b.ReportMetric(float64(failed), "failed")
	if failed > 0 {
		b.Fatalf("%d of %d calls failed", failed, 50*b.N)
	}
}

func BenchmarkFetch(b *testing.B) {
	s, cfg := server(b, testsshd.Options{})
	d := subproc(b, nil, "--config", cfg.SSHConfig)
	head := remoteRepo(b, d, "bench-src", 200)
	fresh := func() string {
		dir := filepath.Join(b.TempDir(), "r")
		gitrepo.Git(b, "/", "init", "-q", dir)
		return dir
	}
	check := func(dir string) {
		fh, _ := os.ReadFile(filepath.Join(dir, ".git", "FETCH_HEAD"))
		if !strings.HasPrefix(string(fh), head) {
			b.Fatalf("FETCH_HEAD %q", fh)
		}
	}
	gitOverSSH := func(b *testing.B, sshCmd string) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			dir := fresh()
			b.StartTimer()
			cmd := exec.Command("git", "-C", dir, "-c", "protocol.version=2", "fetch", "--no-tags", "box:bench-src", "HEAD")
			cmd.Env = append(os.Environ(), "GIT_SSH_COMMAND="+sshCmd)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("git fetch: %v: %s", err, out)
			}
			b.StopTimer()
			check(dir)
			b.StartTimer()
		}
	}
	b.Run("plugin", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			dir := fresh()
			b.StartTimer()
			res, r := link(d, protocol.MethodLinkFetch, fetchParams("box", "bench-src", dir, 60*time.Second))
			if r != nil || res.ExitCode == nil || *res.ExitCode != 0 {
				b.Fatalf("fetch: %+v %+v", res, r)
			}
			b.StopTimer()
			check(dir)
			b.StartTimer()
		}
	})
	b.Run("git-openssh", func(b *testing.B) {
		gitOverSSH(b, "ssh -F "+s.Config+" -o ControlMaster=no -o ControlPath=none")
	})
	b.Run("git-openssh-controlmaster", func(b *testing.B) {
		ctl := controlMaster(b, s)
		gitOverSSH(b, "ssh -F "+s.Config+" -S "+ctl)
	})
}

// BenchmarkOutput100MB reports the plugin's peak RSS while a script prints
// 100 MB.
func BenchmarkOutput100MB(b *testing.B) {
	_, cfg := server(b, testsshd.Options{})
	d := subproc(b, nil, "--config", cfg.SSHConfig)
	for i := 0; i < b.N; i++ {
		res, r := d.exec("box", "head -c 100000000 /dev/zero", ".", 120*time.Second)
		if r != nil || res.ExitCode == nil || !res.Partial {
			b.Fatalf("exec: %+v", r)
		}
	}
	b.ReportMetric(float64(vmHWM(b, d.Pgid())), "peakRSS-KiB")
}

// BenchmarkSideBySide alternates the plugin and OpenSSH in every iteration
// (the machine is shared and noisy: alternating keeps both under the same
// load) and reports each one's mean and their ratio.
func BenchmarkSideBySide(b *testing.B) {
	s, cfg := server(b, testsshd.Options{})
	ctl := controlMaster(b, s)
	d := subproc(b, nil, "--config", cfg.SSHConfig)
	remoteRepo(b, d, "sbs-src", 200)
	proxyCfg := proxyConfig(b, s)
	mctl := filepath.Join(b.TempDir(), "mctl")
	masterCfg := testsshd.WriteConfig(b, s.HostBlock("box")+"  ControlPath "+mctl+"\n")
	testsshd.StartMaster(b, masterCfg, mctl, "box")
	type pair struct{ plugin, openssh time.Duration }
	// Each measurement starts once the previous one's leftovers settled (a
	// cold plugin's remote sessions end just after it exits): untimed.
	measure := func(f func()) time.Duration {
		time.Sleep(30 * time.Millisecond)
		t0 := time.Now()
		f()
		return time.Since(t0)
	}
	fresh := func() string {
		dir := filepath.Join(b.TempDir(), "r")
		gitrepo.Git(b, "/", "init", "-q", dir)
		return dir
	}
	var cold, warm, fetch, proxy, master pair
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cold.plugin += measure(func() { coldPlugin(b, cfg.SSHConfig) })
		cold.openssh += measure(func() { openssh(b, s, "-o", "ControlMaster=no", "-o", "ControlPath=none") })
		proxy.plugin += measure(func() { coldPlugin(b, proxyCfg) })
		proxy.openssh += measure(func() { sshTrue(b, proxyCfg) })
		master.plugin += measure(func() { coldPlugin(b, masterCfg) })
		master.openssh += measure(func() { sshTrue(b, masterCfg) })
		warm.plugin += measure(func() { d.mustExec("box", "true") })
		warm.openssh += measure(func() { openssh(b, s, "-S", ctl) })
		dir := fresh()
		fetch.plugin += measure(func() {
			res, r := link(d, protocol.MethodLinkFetch, fetchParams("box", "sbs-src", dir, 60*time.Second))
			if r != nil || res.ExitCode == nil || *res.ExitCode != 0 {
				b.Fatalf("fetch: %+v %+v", res, r)
			}
		})
		dir = fresh()
		fetch.openssh += measure(func() {
			cmd := exec.Command("git", "-C", dir, "-c", "protocol.version=2", "fetch", "--no-tags", "box:sbs-src", "HEAD")
			cmd.Env = append(os.Environ(), "GIT_SSH_COMMAND=ssh -F "+s.Config+" -S "+ctl)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("git fetch: %v: %s", err, out)
			}
		})
	}
	n := float64(b.N)
	for _, m := range []struct {
		name string
		p    pair
	}{{"cold", cold}, {"warm", warm}, {"fetch", fetch}, {"proxycommand-cold", proxy}, {"controlmaster-cold", master}} {
		b.ReportMetric(float64(m.p.plugin.Milliseconds())/n, m.name+"-plugin-ms")
		b.ReportMetric(float64(m.p.openssh.Milliseconds())/n, m.name+"-openssh-ms")
		b.ReportMetric(float64(m.p.plugin)/float64(m.p.openssh), m.name+"-ratio")
	}
}
