package ssh

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/crashdrill"
)

func TestProxyJump(t *testing.T) {
	jump := testsshd.Start(t, testsshd.Options{})
	target := testsshd.Start(t, testsshd.Options{})
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	block := target.HostBlock("box") + "  ProxyJump jump\n" + jump.HostBlock("jump")
	if err := os.WriteFile(cfg, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	before := jump.Logins()
	d, _ := inproc(t, Config{SSHConfig: cfg})
	if out := d.mustExec("box", "echo $SSH_CONNECTION"); !strings.Contains(out, fmt.Sprintf(" %d", target.Port)) {
		t.Fatalf("SSH_CONNECTION %q does not name the target's port", out)
	}
	if after := jump.Logins(); after != before+1 {
		t.Fatalf("the jump host authenticated %d logins, want 1: the connection did not go through it", after-before)
	}
	// A chain of two jumps.
	jump2 := testsshd.Start(t, testsshd.Options{})
	chain := target.HostBlock("box") + "  ProxyJump jump,jump2\n" + jump.HostBlock("jump") + jump2.HostBlock("jump2")
	cfgChain := filepath.Join(t.TempDir(), "ssh_config")
	os.WriteFile(cfgChain, []byte(chain), 0o600)
	before2 := jump2.Logins()
	dc, _ := inproc(t, Config{SSHConfig: cfgChain})
	dc.mustExec("box", "true")
	if after := jump2.Logins(); after != before2+1 {
		t.Fatalf("the second jump authenticated %d logins, want 1", after-before2)
	}
	// A jump host whose key is unknown is a hand-back naming the jump host.
	bad := strings.Replace(block, "UserKnownHostsFile "+jump.KnownHosts, "UserKnownHostsFile /dev/null", 1)
	cfg2 := filepath.Join(t.TempDir(), "ssh_config")
	os.WriteFile(cfg2, []byte(bad), 0o600)
	expectHuman(t, Config{SSHConfig: cfg2}, "jump host jump")
}

func TestConcurrentExecs(t *testing.T) {
	_, cfg := server(t, testsshd.Options{})
	d, b := inproc(t, cfg)
	const n = 50
	errs := make(chan string, n)
	crashdrill.Parallel(n, func(i int) {
		res, r := d.exec("box", fmt.Sprintf("sleep 0.2; echo %d", i), ".", 60*time.Second)
		switch {
		case r != nil:
			errs <- r.Message
		case res.ExitCode == nil || *res.ExitCode != 0 || res.Stdout != fmt.Sprintf("%d\n", i):
			errs <- fmt.Sprintf("call %d: exit %s stdout %q stderr %q", i, fmtExit(res.ExitCode), res.Stdout, res.Stderr)
		}
	})
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// No session open was refused: the slots never shrank.
	if cs := b.pool.all(); len(cs) != 1 || cs[0].slots.capacity() != DefaultMaxSessions-2 {
		t.Errorf("the server refused sessions (slots now %d of %d)", cs[0].slots.capacity(), DefaultMaxSessions-2)
	}
}

// TestSlotsShrink: the server allows fewer sessions than --max-sessions
// says; a refused session open shrinks the slots and queues, and every call
// still succeeds.
func TestSlotsShrink(t *testing.T) {
	_, cfg := server(t, testsshd.Options{MaxSessions: 3})
	cfg.MaxSessions = 10
	d, b := inproc(t, cfg)
	errs := make(chan string, 20)
	crashdrill.Parallel(20, func(int) {
		res, r := d.exec("box", "sleep 0.3; echo ok", ".", 60*time.Second)
		if r != nil {
			errs <- r.Message
		} else if res.Stdout != "ok\n" {
			errs <- "stdout " + res.Stdout
		}
	})
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	cs := b.pool.all()
	if len(cs) != 1 {
		t.Fatalf("%d connections, want one per destination", len(cs))
	}
	if c := cs[0].slots.capacity(); c > 2 {
		t.Errorf("slots %d after refusals, want at most 2 (MaxSessions 3, one kept for stops)", c)
	}
}

// TestStopWithAllSlotsBusy: every slot holds a runaway script; the stops
// still go through the kept control session.
func TestStopWithAllSlotsBusy(t *testing.T) {
	s, cfg := server(t, testsshd.Options{MaxSessions: 4})
	cfg.MaxSessions = 4
	noWatchdog(t)
	d, _ := inproc(t, cfg)
	crashdrill.Parallel(2, func(i int) {
		res, r := d.exec("box", fmt.Sprintf("sleep 3270%d", i), ".", 1500*time.Millisecond)
		if r != nil || res.ExitCode != nil {
			t.Errorf("want a timed-out answer, got %+v %+v", res, r)
		}
	})
	if left := waitGone(t, s, "sleep 3270", 10*time.Second); len(left) > 0 {
		t.Fatalf("still running:\n%s", strings.Join(left, "\n"))
	}
	d.mustExec("box", "true") // the slots came back
}

func TestCwdAndScriptQuoting(t *testing.T) {
	d := onBox(t)
	dir := `mu dir 'q' "$(x)"`
	d.mustExec("box", `mkdir -p "$HOME/mu dir 'q' \"\$(x)\""`)
	res, r := d.exec("box", `pwd; printf '%s\n' "it's \$HOME \"ok\""`, dir, 30*time.Second)
	if r != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("exec: %+v %+v", res, r)
	}
	if !strings.HasSuffix(strings.Split(res.Stdout, "\n")[0], "/"+dir) {
		t.Errorf("cwd: %q", res.Stdout)
	}
	if !strings.Contains(res.Stdout, `it's $HOME "ok"`) {
		t.Errorf("script text was altered: %q", res.Stdout)
	}
	res, r = d.exec("box", "true", "/nonexistent dir", 30*time.Second)
	if r != nil || res.ExitCode == nil || *res.ExitCode == 0 {
		t.Fatalf("cwd that does not exist: %+v %+v", res, r)
	}
}

// TestStopWhenMaxSessionsOverstated: --max-sessions says 10, the server
// allows 3. The scripts fill the server; the stop still has its session.
// A call that waited for a slot past its timeout started nothing: retryable.
func TestStopWhenMaxSessionsOverstated(t *testing.T) {
	s, cfg := server(t, testsshd.Options{MaxSessions: 3})
	cfg.MaxSessions = 10
	noWatchdog(t)
	d, _ := inproc(t, cfg)
	d.mustExec("box", "true") // the connection, and its control session, exist
	crashdrill.Parallel(4, func(i int) {
		res, r := d.exec("box", fmt.Sprintf("sleep 3280%d", i), ".", 2*time.Second)
		if r != nil && r.Kind != "retryable" || r == nil && res.ExitCode != nil {
			t.Errorf("want a timed-out answer or a retryable refusal, got %+v %+v", res, r)
		}
	})
	if left := waitGone(t, s, "sleep 3280", 10*time.Second); len(left) > 0 {
		t.Fatalf("still running:\n%s", strings.Join(left, "\n"))
	}
}

// TestRedialAfterLoss: a connection that died is dialled again by the next
// call; a call never rides a dead connection.
func TestRedialAfterLoss(t *testing.T) {
	_, cfg := server(t, testsshd.Options{})
	d, b := inproc(t, cfg)
	d.mustExec("box", "true")
	first := b.pool.all()
	if len(first) != 1 {
		t.Fatalf("%d connections", len(first))
	}
	first[0].close()
	<-first[0].done
	if out := d.mustExec("box", "echo again"); out != "again\n" {
		t.Fatalf("stdout %q", out)
	}
	if now := b.pool.all(); len(now) != 1 || now[0] == first[0] {
		t.Fatal("the call did not get a new connection")
	}
}

// TestProxyJumpFirstHopProxyCommand: ssh -J reads the first hop's whole
// configuration: a bastion reached through its own ProxyCommand.
func TestProxyJumpFirstHopProxyCommand(t *testing.T) {
	jump := testsshd.Start(t, testsshd.Options{})
	target := testsshd.Start(t, testsshd.Options{})
	jumpBlock := strings.Replace(jump.HostBlock("jump"), fmt.Sprintf("Port %d", jump.Port), "Port 1", 1) +
		fmt.Sprintf("  HostKeyAlias jump-alias\n  ProxyCommand busybox nc %s %d\n", jump.Host, jump.Port)
	kh := filepath.Join(t.TempDir(), "kh")
	os.WriteFile(kh, []byte("jump-alias "+jump.HostKeyPub+"\n"), 0o600)
	jumpBlock = strings.Replace(jumpBlock, "UserKnownHostsFile "+jump.KnownHosts, "UserKnownHostsFile "+kh, 1)
	cfg := testsshd.WriteConfig(t, target.HostBlock("box")+"  ProxyJump jump\n"+jumpBlock)
	if out, err := exec.Command("ssh", "-F", cfg, "-o", "ControlPath=none", "box", "true").CombinedOutput(); err != nil {
		t.Fatalf("ssh: %v: %s", err, out)
	}
	before := jump.Logins()
	expectOK(t, Config{SSHConfig: cfg})
	if after := jump.Logins(); after != before+1 {
		t.Fatalf("the jump host saw %d logins, want 1", after-before)
	}
}
