// Package proc runs a plugin's local helper processes (scripts, git) so that
// each one's whole tree can be stopped, without ever leaving the plugin's
// process group: the spec forbids setsid and double forks, so a run cannot
// get a group of its own. Every run is marked with an environment variable
// that its descendants inherit; stopping a run kills every process carrying
// the mark, and every descendant of one, until none is left.
//
// What it cannot reach: a descendant that clears its environment and is
// re-parented away from the tree before the scan (env -i plus a double
// fork). Documented in docs/processes.md.
package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MarkVar is the environment variable that marks a run's processes.
const MarkVar = "MU_PLUGIN_RUN"

var (
	seq     atomic.Int64
	mu      sync.Mutex
	live    = map[string]*exec.Cmd{} // mark -> running command
	started = map[string]uint64{}    // mark -> the run's start, in clock ticks since boot
)

// Options tune Run.
type Options struct {
	// KillLeftovers stops whatever the run left behind once its leader has
	// exited (a `cmd &` still running): nothing outlives the call.
	KillLeftovers bool
	// WaitDelay bounds the wait for output pipes after the leader exits (a
	// background child can hold them open). Default 2 s.
	WaitDelay time.Duration
}

// Result says how a run ended.
type Result struct {
	ExitCode int  // the leader's exit status (-1 when killed)
	Stopped  bool // ctx ended first and the tree was killed
}

// Run starts cmd (not yet started; its Env, Stdin/Stdout/Stderr and Dir set
// by the caller, Env nil meaning the plugin's own), waits for it, and when
// ctx ends first kills its whole tree and returns once nothing of it is left.
func Run(ctx context.Context, cmd *exec.Cmd, opts Options) (Result, error) {
	mark := fmt.Sprintf("%d-%d", os.Getpid(), seq.Add(1))
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], MarkVar+"="+mark)
	if cmd.SysProcAttr != nil && (cmd.SysProcAttr.Setpgid || cmd.SysProcAttr.Setsid) {
		return Result{}, errors.New("proc: a run must stay in the plugin's process group")
	}
	cmd.WaitDelay = opts.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 2 * time.Second
	}
	since := bootTicks()
	if err := cmd.Start(); err != nil {
		return Result{}, err
	}
	mu.Lock()
	live[mark] = cmd
	started[mark] = since
	mu.Unlock()
	defer func() {
		mu.Lock()
		delete(live, mark)
		delete(started, mark)
		mu.Unlock()
	}()

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	stopped := false
	select {
	case werr = <-done:
	case <-ctx.Done():
		stopped = true
		killTree(mark, cmd.Process.Pid, since)
		werr = <-done
	}
	if opts.KillLeftovers || stopped {
		killTree(mark, cmd.Process.Pid, since)
	}
	res := Result{ExitCode: -1, Stopped: stopped}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	if stopped {
		return res, nil
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) && !errors.Is(werr, exec.ErrWaitDelay) {
		return res, werr
	}
	return res, nil
}

// KillAll kills every run still going: for a plugin's Stop hook.
func KillAll() {
	type run struct {
		pid   int
		since uint64
	}
	mu.Lock()
	runs := make(map[string]run, len(live))
	for m, c := range live {
		if c.Process != nil {
			runs[m] = run{c.Process.Pid, started[m]}
		}
	}
	mu.Unlock()
	for m, r := range runs {
		killTree(m, r.pid, r.since)
	}
}

// KillTree SIGKILLs the leader, every process whose environment carries
// MarkVar=mark, and every descendant of those, repeating until a scan finds
// none (at most about 2 s).
func KillTree(mark string, leader int) { killTree(mark, leader, 0) }

func killTree(mark string, leader int, since uint64) {
	if leader > 0 {
		_ = syscall.Kill(leader, syscall.SIGKILL)
	}
	for i := 0; i < 200; i++ {
		pids := find(mark, leader, since)
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Find lists the live (not zombie) processes of a run: those marked with
// mark, and their descendants and the leader's.
func Find(mark string, leader int) []int { return find(mark, leader, 0) }

// find is Find over the processes started at or after since (clock ticks
// since boot): a run's processes cannot be older than the run, and reading
// only their environments keeps a scan cheap.
func find(mark string, leader int, since uint64) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte(MarkVar + "=" + mark + "\x00")
	parent := map[int]int{}
	in := map[int]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		ppid, state, start, ok := stat(pid)
		if !ok || state == "Z" || state == "X" {
			continue
		}
		parent[pid] = ppid
		if pid == leader {
			in[pid] = true
			continue
		}
		if start+1 < since { // a tick of slack for rounding
			continue
		}
		if env, err := os.ReadFile("/proc/" + e.Name() + "/environ"); err == nil {
			if containsEnv(env, want) {
				in[pid] = true
			}
		}
	}
	// Close over descendants.
	for changed := true; changed; {
		changed = false
		for pid, pp := range parent {
			if !in[pid] && in[pp] {
				in[pid], changed = true, true
			}
		}
	}
	out := make([]int, 0, len(in))
	for pid := range in {
		if _, alive := parent[pid]; alive {
			out = append(out, pid)
		}
	}
	return out
}

func containsEnv(env, want []byte) bool {
	s := string(env)
	w := string(want)
	return strings.HasPrefix(s, w) || strings.Contains(s, "\x00"+w) ||
		strings.HasSuffix(s, "\x00"+strings.TrimSuffix(w, "\x00")) || s == strings.TrimSuffix(w, "\x00")
}

// stat reads a process's parent pid, state and start time (clock ticks
// since boot) from /proc/PID/stat.
func stat(pid int) (ppid int, state string, start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, "", 0, false
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 20 {
		return 0, "", 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	start, _ = strconv.ParseUint(f[19], 10, 64) // field 22 of stat
	return ppid, f[0], start, err == nil
}

// bootTicks is now, in the clock ticks since boot that /proc/PID/stat
// counts start times in (USER_HZ, 100 on Linux).
func bootTicks() uint64 {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	up, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return uint64(up * 100)
}

// PGID returns the process group of pid.
func PGID(pid int) (int, error) { return syscall.Getpgid(pid) }
