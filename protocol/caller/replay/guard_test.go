package replay

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/protocol"
)

// The guards before anything is asked: the writer still lives, another
// resolver holds the intent, the plugin process the call went to still
// lives. Each refuses with nothing sent, and the intent stays.

// crashedAcquire leaves an unresolved host.acquire intent (crash-before)
// and a new fake to resolve it with.
func crashedAcquire(t *testing.T) (*Journal, *Intent, *drive.Plugin) {
	state, j := t.TempDir(), openJ(t)
	p1 := fake(t, state, crash(protocol.MethodHostAcquire.Name, "crash-before"))
	in := crashed(t, j, p1, protocol.MethodHostAcquire.Name, acquireP("k1"))
	return j, in, fake(t, state, nil)
}

// sleeper starts a process (in a group of its own) that lives until the
// test kills it.
func sleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "600")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c
}

func nothingAsked(t *testing.T, p *drive.Plugin) {
	t.Helper()
	if m := outMethods(p); len(m) != 1 {
		t.Fatalf("sent %v, want the handshake only", m)
	}
}

func TestWriterAliveRefuses(t *testing.T) {
	j, in, p2 := crashedAcquire(t)
	w := sleeper(t)
	in.WriterPID = w.Process.Pid // another mu process wrote it, and lives
	if err := j.write(in, false); err != nil {
		t.Fatal(err)
	}
	wantState(t, resolve(t, j, p2, in), Unresolved, ReasonWriterAlive)
	nothingAsked(t, p2)
	// Once it is gone the intent resolves.
	_ = w.Process.Kill()
	_ = w.Wait()
	wantState(t, resolve(t, j, p2, in), None, ReasonFenced)
}

func TestAnotherResolverHoldsIt(t *testing.T) {
	j, in, p2 := crashedAcquire(t)
	release, err := j.hold(in.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, resolve(t, j, p2, in), Unresolved, ReasonBusy)
	nothingAsked(t, p2)
	release()
	wantState(t, resolve(t, j, p2, in), None, ReasonFenced)
}

// A none while the recorded process group still holds a process does not
// count.
func TestNoneWhilePluginGroupLives(t *testing.T) {
	j, in, p2 := crashedAcquire(t)
	g := sleeper(t)
	in.Pgid = g.Process.Pid // its own group
	if err := j.write(in, false); err != nil {
		t.Fatal(err)
	}
	wantState(t, resolve(t, j, p2, in), Unresolved, ReasonPluginAlive)
	wantJournal(t, j, 1)
}
