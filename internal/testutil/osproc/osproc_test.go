package osproc

import (
	"os"
	"os/exec"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
)

func TestAliveProcs(t *testing.T) {
	mark := "TESTUTIL_MARK=" + t.Name()
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), mark)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if got := Procs(func(kv string) bool { return kv == mark }); len(got) != 1 || got[0] != pid || !Alive(pid) {
		t.Fatalf("Procs %v, want [%d]", got, pid)
	}
	cmd.Process.Kill()
	if !waitfor.Poll(waitfor.Patience, func() bool { return !Alive(pid) }) { // a zombie until reaped
		t.Fatal("a killed, unreaped child stays alive")
	}
	cmd.Wait()
	if Alive(pid) || len(Procs(func(kv string) bool { return kv == mark })) != 0 {
		t.Fatal("a reaped child is still listed")
	}
}
