package proc

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var (
	adoptOnce sync.Once
	owned     atomic.Bool
)

// adopt makes this process a child subreaper: an orphan of anything it
// started is re-parented to it, not to init. Failing (not Linux ≥ 3.4) it
// stays as it was: the scans still find whatever keeps its mark.
func adopt() {
	adoptOnce.Do(func() { reaper.Store(unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil) })
}

// OwnChildren declares that this process starts children only through Run
// (a plugin's process does; a test binary does not): every child that is
// not a run's leader is then an orphan a run left, and KillAll kills it
// whatever its environment says. It also makes the process a subreaper now.
func OwnChildren() {
	adopt()
	owned.Store(true)
}

// killer stops one set of processes: what want accepts (a run's mark),
// the leader, their descendants, and with all every child of this process
// that is not a run's leader. It scans /proc and SIGKILLs what it finds
// until a scan finds nothing and nothing is in doubt.
type killer struct {
	want   func(env []byte) bool
	leader int
	since  uint64 // only processes started at or after it (clock ticks since boot) can be the run's
	all    bool
	self   int
	dead   map[int]bool // orphans seen dead (zombies) by an earlier scan
	reap   map[int]bool // orphans killed: reaped at the end
	empty  map[int]int  // how many scans read an orphan's environment empty
}

func newKiller(want func(env []byte) bool, leader int, since uint64, all bool) *killer {
	return &killer{want: want, leader: leader, since: since, all: all, self: os.Getpid(),
		dead: map[int]bool{}, reap: map[int]bool{}, empty: map[int]int{}}
}

// scan lists the live processes to kill, and whether a process could not
// be judged (look again):
//   - a child of this process (an orphan re-parented here) mid-exec: its
//     environment cannot be read whole yet (read in part, or not at all;
//     one that reads empty emptyRounds times running has cleared it,
//     env -i, and is no longer in doubt);
//   - an orphan of the run that has died since the last scan: /proc is
//     listed before each process is read, so a child it forked in between,
//     now re-parented here, is not in this listing.
func (k *killer) scan() (pids []int, unsure bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	leaders := liveLeaders()
	parent := map[int]int{}
	in := map[int]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == k.self {
			continue
		}
		ppid, state, start, ok := stat(pid)
		if !ok {
			continue
		}
		orphan := ppid == k.self && !leaders[pid] && pid != k.leader
		if state == "Z" || state == "X" {
			if orphan && start+1 >= k.since && !k.dead[pid] {
				k.dead[pid], unsure = true, true
				if owned.Load() {
					k.reap[pid] = true // every child here is a run's: its zombie is ours to reap
				}
			}
			continue
		}
		parent[pid] = ppid
		switch {
		case pid == k.leader, orphan && k.all:
			in[pid] = true
		case start+1 < k.since: // a tick of slack for rounding
		default:
			env, whole := Environ(pid)
			switch {
			case whole && k.want(env):
				in[pid] = true
			case orphan && !whole && (len(env) > 0 || k.empty[pid] < emptyRounds):
				k.empty[pid]++
				unsure = true
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
	for pid := range in {
		pids = append(pids, pid)
		if parent[pid] == k.self && !leaders[pid] && pid != k.leader {
			k.reap[pid] = true
		}
	}
	return pids, unsure
}

// Scanning bounds: a kill repeats until a scan finds nothing and nothing
// is in doubt, at most killRounds times, scanPause apart (about 2 s). An
// environment that reads empty emptyRounds scans running is empty (env -i):
// an exec's window, where it reads empty too, lasts far less.
const (
	killRounds  = 200
	emptyRounds = 10
	scanPause   = 10 * time.Millisecond
)

// kill SIGKILLs what its scans find until one finds nothing and nothing is
// in doubt, then reaps the orphans it killed (never a run's leader, whose
// Cmd waits for it).
func kill(want func(env []byte) bool, leader int, since uint64, all bool) {
	k := newKiller(want, leader, since, all)
	if leader > 0 {
		_ = syscall.Kill(leader, syscall.SIGKILL)
	}
	for i := 0; i < killRounds; i++ {
		pids, doubt := k.scan()
		if len(pids) == 0 && !doubt {
			break
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(scanPause)
	}
	reapDead(k.reap)
}

// reapDead waits for each pid, a child of this process, so no zombie is
// left; one not dead within about a second is left to the process's exit.
func reapDead(pids map[int]bool) {
	for i := 0; i < 100 && len(pids) > 0; i++ {
		for p := range pids {
			var ws unix.WaitStatus
			n, err := unix.Wait4(p, &ws, unix.WNOHANG, nil)
			if n == p || err != nil { // reaped, or not our child (ECHILD)
				delete(pids, p)
			}
		}
		if len(pids) > 0 {
			time.Sleep(scanPause)
		}
	}
}

// liveLeaders is the set of pids of the runs going now.
func liveLeaders() map[int]bool {
	mu.Lock()
	defer mu.Unlock()
	return leadersLocked()
}

// leadersLocked is liveLeaders with mu held.
func leadersLocked() map[int]bool {
	out := make(map[int]bool, len(live))
	for _, c := range live {
		if c.Process != nil {
			out[c.Process.Pid] = true
		}
	}
	return out
}

// hasVarPrefix reports whether env (NUL-separated) holds a variable that
// starts with prefix.
func hasVarPrefix(env []byte, prefix string) bool {
	s := string(env)
	return strings.HasPrefix(s, prefix) || strings.Contains(s, "\x00"+prefix)
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

// envBuf bounds the one read Environ makes; a larger environment is read
// whole with os.ReadFile.
const envBuf = 64 << 10

// Environ reads a process's environment (NUL-separated, as
// /proc/PID/environ holds it). whole is false when it could not be read
// whole: the process is gone, not readable, or mid-exec. /proc holds on to
// the address space the file was opened on, so reading it in several calls
// (as os.ReadFile does) across an exec returns the head of the old
// environment and then nothing: a variable near its end, such as a run's
// mark, reads as absent. One read either holds all of it or nothing, and an
// environment is whole only when it ends with its NUL.
func Environ(pid int) (env []byte, whole bool) {
	path := "/proc/" + strconv.Itoa(pid) + "/environ"
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	bp := envPool.Get().(*[]byte)
	defer envPool.Put(bp)
	buf := *bp
	n, err := unix.Read(fd, buf)
	if err != nil || n <= 0 {
		return nil, false
	}
	if n == len(buf) { // larger than one read: read on; a short tail shows as not whole
		rest, err := os.ReadFile(path)
		if err != nil || len(rest) == 0 {
			return nil, false
		}
		return rest, rest[len(rest)-1] == 0
	}
	return append([]byte(nil), buf[:n]...), buf[n-1] == 0
}

var envPool = sync.Pool{New: func() any { b := make([]byte, envBuf); return &b }}

// WithArgv lists the live (not zombie) processes whose argv is exactly argv:
// for tests that look for what a run left.
func WithArgv(argv ...string) []int {
	want := strings.Join(argv, "\x00") + "\x00"
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err != nil || string(b) != want {
			continue
		}
		if _, state, _, ok := stat(pid); ok && state != "Z" && state != "X" {
			out = append(out, pid)
		}
	}
	return out
}

// EscapePatterns are scripts (`%d` the sleep's length, unique per run) that
// leave a process outside a run's tree: setsid, with and without -f,
// directly or through a shell that exits at once, double forks. The tests
// here and the fake's prove that no run leaves one of them alive.
var EscapePatterns = []string{
	`setsid sh -c 'sleep %d' &`,
	`setsid sleep %d &`,
	`(setsid sleep %d &)`,
	`setsid -f sleep %d`,
	`sh -c 'setsid sleep %d & exit'`,
	`nohup setsid sleep %d >/dev/null 2>&1 &`,
	`(sleep %d &)`,
	`setsid sh -c 'sleep %d & exit' &`,
}
