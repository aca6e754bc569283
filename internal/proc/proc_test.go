package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/testlog"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"golang.org/x/sys/unix"
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
	var out testlog.LockedBuffer
	cmd.Stdout = &out
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitfor.Poll(waitfor.Patience, func() bool { return strings.Contains(out.String(), "started") })
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
	if got, want := strings.TrimSpace(out.String()), strconv.Itoa(syscall.Getpgrp()); got != want {
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

// sleepers lists this test process's runs' live processes whose argv is
// `sleep N` with N matching pattern (a regexp). Only processes carrying a
// mark of this process count: the machine is shared, and another user's
// `sleep 300` is not ours.
func sleepers(t *testing.T, pattern string) []string {
	t.Helper()
	re := regexp.MustCompile(`^sleep\x00(` + pattern + `)\x00$`)
	var left []string
	for _, pid := range ours() {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && re.Match(b) {
			left = append(left, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(strings.TrimSuffix(string(b), "\x00"), "\x00", " ")))
		}
	}
	return left
}

// ours lists the live processes that carry a mark of this process.
func ours() []int {
	prefix := MarkVar + "=" + strconv.Itoa(os.Getpid()) + "-"
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, state, _, ok := stat(pid); !ok || state == "Z" {
			continue
		}
		if env, _ := Environ(pid); hasVarPrefix(env, prefix) {
			out = append(out, pid)
		}
	}
	return out
}

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

// An orphan of a run (its parent exited) is re-parented to this process,
// the child subreaper, not to init; killed, it is reaped (no zombie left).
func TestRunOrphanComesBackAndIsReaped(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", `setsid sleep 621 </dev/null >/dev/null 2>&1 & echo $!`)
	var out bytes.Buffer
	cmd.Stdout = &out
	if _, err := Run(context.Background(), cmd, Options{}); err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("no pid: %q", out.String())
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	ppid, _, _, ok := stat(pid)
	if !ok || ppid != os.Getpid() {
		t.Fatalf("the orphan (pid %d) has parent %d, want this process %d (a child subreaper)", pid, ppid, os.Getpid())
	}
	KillAll()
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); !errors.Is(err, fs.ErrNotExist) {
		st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		t.Fatalf("after KillAll the orphan is still in /proc (%s): killed but not reaped", st)
	}
}

// Escapes from a run's tree (setsid, double forks, a parent that exits at
// once), many times each: none survives Run with KillLeftovers, however
// the scan and the escape's exec interleave.
func TestRunLeavesNoEscapeAlive(t *testing.T) {
	trials := 30
	if testing.Short() {
		trials = 5
	}
	n := 7000
	for _, pat := range EscapePatterns {
		var survived []string
		for i := 0; i < trials; i++ {
			n++
			cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(pat, n))
			if _, err := Run(context.Background(), cmd, Options{KillLeftovers: true}); err != nil {
				t.Fatal(err)
			}
			for _, pid := range withArgv("sleep", strconv.Itoa(n)) {
				survived = append(survived, fmt.Sprintf("sleep %d (pid %d)", n, pid))
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if len(survived) > 0 {
			t.Errorf("%s: %d of %d runs left a process running: %v", pat, len(survived), trials, survived)
		}
	}
}

// withArgv lists the live processes of this test's runs whose argv is
// exactly argv.
func withArgv(argv ...string) []int {
	mine := map[int]bool{}
	for _, pid := range ours() {
		mine[pid] = true
	}
	var out []int
	for _, pid := range WithArgv(argv...) {
		if mine[pid] {
			out = append(out, pid)
		}
	}
	return out
}

// A run that leaves nothing ends without a scan of /proc (the subreaper
// sees no stray child); one that leaves an orphan is scanned, and the
// orphan killed.
func TestRunEndsWithoutScanOnlyWhenNothingIsLeft(t *testing.T) {
	// The orphans earlier tests' escapes left died here as zombies (a test
	// binary does not OwnChildren, so no scan reaps them): reap them first.
	for {
		var ws unix.WaitStatus
		if n, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); n <= 0 || err != nil {
			break
		}
	}
	run := func(script string) int64 {
		before := scans.Load()
		if _, err := Run(context.Background(), exec.Command("/bin/sh", "-c", script), Options{KillLeftovers: true}); err != nil {
			t.Fatal(err)
		}
		return scans.Load() - before
	}
	if n := run("true"); n != 0 || !reaper.Load() {
		t.Fatalf("a run that left nothing: %d scans (subreaper %v), want none", n, reaper.Load())
	}
	if n := run("setsid sleep 631 </dev/null >/dev/null 2>&1 &"); n == 0 {
		t.Fatalf("a run that left an orphan ended without a scan")
	}
	if left := WithArgv("sleep", "631"); len(left) > 0 {
		t.Fatalf("the orphan survived: %v", left)
	}
}
