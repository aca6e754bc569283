package ssh

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKillScriptTreeWhenNotLeader runs the control session's stop script
// locally on a process that is NOT its group's leader (it shares the test's
// group, as a session child would on a server that does not setsid): the
// script must kill that tree only, never the group (it would kill the test).
func TestKillScriptTreeWhenNotLeader(t *testing.T) {
	for _, sh := range []string{"/bin/sh", "/bin/bash"} {
		t.Run(sh, func(t *testing.T) {
			// (A double fork would escape: its orphan leaves the tree. The
			// group kill, on every server that setsids, catches it.)
			victim := exec.Command(sh, "-c", "sleep 3351 & sh -c 'sleep 3352' & sleep 3353")
			if err := victim.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { victim.Wait(); close(done) }()
			time.Sleep(300 * time.Millisecond)
			out, err := exec.Command(sh, "-c", killScript, "mu-kill", strconv.Itoa(victim.Process.Pid)).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "mu-ctl gone") {
				t.Fatalf("kill script: %v: %s", err, out)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the victim survived")
			}
			ps, _ := exec.Command("ps", "-eo", "stat=,args=").Output()
			for _, l := range strings.Split(string(ps), "\n") {
				if strings.Contains(l, "sleep 335") && !strings.HasPrefix(strings.TrimSpace(l), "Z") {
					t.Fatalf("left: %s", l)
				}
			}
		})
	}
}
