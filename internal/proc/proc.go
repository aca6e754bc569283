// Package proc runs a plugin's local helper processes (scripts, git) so that
// each one's whole tree can be stopped, without ever leaving the plugin's
// process group: the spec forbids setsid and double forks, so a run cannot
// get a group of its own. Every run is marked with an environment variable
// that its descendants inherit; stopping a run kills every process carrying
// the mark, and every descendant of one, until none is left.
//
// The process that runs them is a child subreaper (PR_SET_CHILD_SUBREAPER,
// from its first Run): an orphan of a run (`setsid cmd &` whose parent
// exited, a double fork) is re-parented to it rather than to init, so it
// stays where a scan finds it, even in the instant it execs (when its
// environment cannot be read), and it is reaped once killed.
//
// What it cannot reach at a run's end: a descendant that removes the mark
// from its environment (env -i, env -u) and is orphaned before a scan sees
// it. In a plugin process (OwnChildren) KillAll still kills it at exit.
// Documented in docs/processes.md.
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
	// exited (a `cmd &` still running): nothing outlives the call. Its
	// output is then read through pipes the run drains itself, so a
	// leftover holding it open does not delay the end (output.go).
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
	mark := markRun(cmd)
	if cmd.SysProcAttr != nil && (cmd.SysProcAttr.Setpgid || cmd.SysProcAttr.Setsid) {
		return Result{}, errors.New("proc: a run must stay in the plugin's process group")
	}
	cmd.WaitDelay = opts.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 2 * time.Second
	}
	var out *outputs
	if opts.KillLeftovers {
		var err error
		if out, err = pipeOutputs(cmd); err != nil {
			return Result{}, err
		}
	}
	adopt()
	since := bootTicks()
	// Started and registered under the lock: a scan never takes a leader
	// for an orphan to reap (its Cmd waits for it).
	mu.Lock()
	err := cmd.Start()
	if err == nil {
		live[mark] = cmd
		started[mark] = since
	}
	mu.Unlock()
	if out != nil {
		if err != nil {
			out.close()
		} else {
			out.started()
		}
	}
	if err != nil {
		return Result{}, err
	}
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
	// A run that ended by itself and left no process in its tree needs no
	// scan of /proc (treeGone); any doubt, or a stopped run, scans.
	if stopped || (opts.KillLeftovers && !treeGone()) {
		killTree(mark, cmd.Process.Pid, since)
	}
	if out != nil {
		out.drain(cmd.WaitDelay)
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

// KillAll kills every run still going, and whatever any run of this
// process left (anything carrying one of its marks, and its descendants):
// for a plugin's Stop hook. With OwnChildren, every other child of this
// process too (an orphan a run left that removed its mark).
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
	prefix := MarkVar + "=" + strconv.Itoa(os.Getpid()) + "-"
	kill(func(env []byte) bool { return hasVarPrefix(env, prefix) }, 0, 0, owned.Load())
}

// KillTree SIGKILLs the leader, every process whose environment carries
// MarkVar=mark, and every descendant of those, repeating until a scan finds
// none (at most about 2 s).
func KillTree(mark string, leader int) { killTree(mark, leader, 0) }

func killTree(mark string, leader int, since uint64) {
	scans.Add(1)
	want := []byte(MarkVar + "=" + mark + "\x00")
	kill(func(env []byte) bool { return containsEnv(env, want) }, leader, since, false)
}

// KillCarrying SIGKILLs every process whose environment carries
// name=value, whoever started it (another plugin process too), and every
// descendant of one, repeating until a scan finds none: what a provider
// does to a host's runs when the host goes. A process that removed the
// variable from its environment before a scan saw it is not found.
func KillCarrying(name, value string) {
	want := []byte(name + "=" + value + "\x00")
	kill(func(env []byte) bool { return containsEnv(env, want) }, 0, 0, false)
}

// Find lists the live (not zombie) processes of a run: those marked with
// mark, and their descendants and the leader's.
func Find(mark string, leader int) []int {
	want := []byte(MarkVar + "=" + mark + "\x00")
	pids, _ := newKiller(func(env []byte) bool { return containsEnv(env, want) }, leader, 0, false).scan()
	return pids
}

func containsEnv(env, want []byte) bool {
	s := string(env)
	w := string(want)
	return strings.HasPrefix(s, w) || strings.Contains(s, "\x00"+w) ||
		strings.HasSuffix(s, "\x00"+strings.TrimSuffix(w, "\x00")) || s == strings.TrimSuffix(w, "\x00")
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

// markRun gives cmd's environment a mark of its own, the run's name in
// every process of its tree.
func markRun(cmd *exec.Cmd) string {
	mark := fmt.Sprintf("%d-%d", os.Getpid(), seq.Add(1))
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], MarkVar+"="+mark)
	return mark
}
