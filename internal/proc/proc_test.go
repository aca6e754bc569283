package proc

import (
	"bytes"
	"context"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A timed-out run leaves nothing behind: its & and nohup children and a
// trap-ignoring grandchild are all gone when Run returns.
func TestRunKillsWholeTreeOnCancel(t *testing.T) {
	dir := t.TempDir()
	script := `
sleep 300 &
nohup sleep 301 >/dev/null 2>&1 &
sh -c 'trap "" HUP TERM INT; sleep 302' &
echo started
sleep 303
`
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	var out syncBuf
	cmd.Stdout = &out
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for !strings.Contains(out.String(), "started") {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	res, err := Run(ctx, cmd, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped {
		t.Fatalf("run not reported stopped: %+v", res)
	}
	if left := sleepers(t, "30[0-3]"); len(left) > 0 {
		t.Fatalf("processes left behind: %v", left)
	}
}

// A run that exits normally with KillLeftovers leaves no background child;
// its exit code is reported; it stays in this process group.
func TestRunLeftoversAndGroup(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", `sleep 311 >/dev/null 2>&1 & ps -o pgid= -p $$; exit 7`)
	var out bytes.Buffer
	cmd.Stdout = &out
	res, err := Run(context.Background(), cmd, Options{KillLeftovers: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 7 || res.Stopped {
		t.Fatalf("got %+v", res)
	}
	if got, want := strings.TrimSpace(out.String()), itoa(syscall.Getpgrp()); got != want {
		t.Fatalf("script ran in group %s, plugin's is %s", got, want)
	}
	if left := sleepers(t, "311"); len(left) > 0 {
		t.Fatalf("leftover not killed: %v", left)
	}
}

func TestRunRefusesNewGroup(t *testing.T) {
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if _, err := Run(context.Background(), cmd, Options{}); err == nil {
		t.Fatal("a run with Setpgid was accepted")
	}
}

func sleepers(t *testing.T, pattern string) []string {
	t.Helper()
	out, _ := exec.Command("pgrep", "-a", "-f", "^sleep "+pattern+"$").Output()
	var left []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			left = append(left, l)
		}
	}
	return left
}

func itoa(n int) string { return strconv.Itoa(n) }

// syncBuf is a bytes.Buffer safe for one writer and one reader.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func BenchmarkRunTrue(b *testing.B) {
	for _, leftovers := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "kill-leftovers"}[leftovers], func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Run(context.Background(), exec.Command("/bin/true"), Options{KillLeftovers: leftovers}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
