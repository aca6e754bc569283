package replay

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
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

// Another invocation wrote it and lives: a process of its own holds that
// invocation's lock, as a running mu holds its journal's.
func TestWriterAliveRefuses(t *testing.T) {
	j, in, p2 := crashedAcquire(t)
	if err := j.Next(); err != nil { // this test is the next invocation
		t.Fatal(err)
	}
	w := exec.Command("flock", invocationLock(j.Dir(), "w"), "sleep", "600")
	w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	kill := func() { _ = syscall.Kill(-w.Process.Pid, syscall.SIGKILL); _ = w.Wait() } // flock and its sleep
	t.Cleanup(kill)
	in.Invocation = "w" // another mu process wrote it, and lives
	if err := j.write(in, false); err != nil {
		t.Fatal(err)
	}
	if !waitfor.Poll(time.Minute, func() bool { alive, _ := j.invocationLives("w"); return alive }) {
		t.Fatal("the writer never took its lock")
	}
	wantState(t, resolve(t, j, p2, in), Unresolved, ReasonWriterAlive)
	nothingAsked(t, p2)
	// Once it is gone the intent resolves, though its lock file stays.
	kill()
	wantState(t, resolve(t, j, p2, in), None, ReasonFenced)
}

// The invocation that wrote an intent does not resolve it: the spec leaves
// that to the next verb, once this one has ended.
func TestSameInvocationRefuses(t *testing.T) {
	j, in, p2 := crashedAcquire(t)
	out, err := j.Resolve(waitfor.Context(t, time.Minute), p2.Plugin, in)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, out, Unresolved, ReasonWriterAlive)
	nothingAsked(t, p2)
	wantJournal(t, j, 1)
	wantState(t, resolve(t, j, p2, in), None, ReasonFenced)
}

// Two invocations in one process: the first one's intents resolve in the
// second only once the first is closed.
func TestOpenInvocationRefusesUntilClosed(t *testing.T) {
	j, in, p2 := crashedAcquire(t)
	k, err := Open(j.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	out, err := k.Resolve(waitfor.Context(t, time.Minute), p2.Plugin, in)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, out, Unresolved, ReasonWriterAlive)
	nothingAsked(t, p2)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	out, err = k.Resolve(waitfor.Context(t, time.Minute), p2.Plugin, in)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, out, None, ReasonFenced)
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
