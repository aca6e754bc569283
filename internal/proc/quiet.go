package proc

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// reaper is set once this process is a child subreaper (adopt succeeded).
var reaper atomic.Bool

// scans counts the kills by scan (killTree), for the tests that show which
// way a run's end went.
var scans atomic.Int64

// treeGone reports, without a scan of /proc, that a run whose leader has
// exited and been waited for left nothing behind. It holds when this process
// is a child subreaper and has no child but the leaders of runs going now:
// every process the run started is then a descendant of one of this
// process's children (its leader's children were re-parented here when the
// leader exited, and so is every orphan below them), so none is left. Read
// under mu, so a run starting meanwhile is a live leader already. A process
// the run got another daemon to start outside its tree, carrying its mark,
// is seen only by the scan: docs/processes.md.
//
// The kernel's children lists may skip an entry while another child is
// being reaped, so two reads must both find no stray child. Any doubt (no
// such file: a kernel without CONFIG_PROC_CHILDREN) answers false, and the
// caller scans.
func treeGone() bool {
	if !reaper.Load() {
		return false
	}
	mu.Lock()
	defer mu.Unlock()
	leaders := leadersLocked()
	for range 2 {
		if !onlyLeaders(leaders) {
			return false
		}
	}
	return true
}

// onlyLeaders reports whether every child of this process (of each of its
// threads) is one of leaders.
func onlyLeaders(leaders map[int]bool) bool {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil || len(tasks) == 0 {
		return false
	}
	buf := make([]byte, 4096)
	for _, t := range tasks {
		fd, err := unix.Open("/proc/self/task/"+t.Name()+"/children", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		n, err := unix.Read(fd, buf)
		unix.Close(fd)
		if err != nil || n == len(buf) { // too many to read in one go: scan instead
			return false
		}
		for _, f := range strings.Fields(string(buf[:n])) {
			pid, err := strconv.Atoi(f)
			if err != nil || !leaders[pid] {
				return false
			}
		}
	}
	return true
}
