package contract

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/mu-org/mu-plugins/internal/proc"
)

// procInfo is one process as /proc shows it.
type procInfo struct {
	pid, ppid, pgid int
	state           byte
	comm            string
}

func (p procInfo) String() string {
	return fmt.Sprintf("pid %d (%s) in process group %d", p.pid, p.comm, p.pgid)
}

// readStat parses /proc/<pid>/stat.
func readStat(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
	i := bytes.IndexByte(b, '(')
	j := bytes.LastIndexByte(b, ')')
	if i < 0 || j < i || j+2 >= len(b) {
		return procInfo{}, false
	}
	f := bytes.Fields(b[j+2:])
	if len(f) < 3 || len(f[0]) != 1 {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return procInfo{}, false
	}
	return procInfo{pid: pid, ppid: ppid, pgid: pgid, state: f[0][0], comm: string(b[i+1 : j])}, true
}

// allProcs lists every live (non-zombie) process.
func allProcs() []procInfo {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var out []procInfo
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if p, ok := readStat(pid); ok && p.state != 'Z' && p.state != 'X' {
			out = append(out, p)
		}
	}
	return out
}

// hasMark reports whether the process's environment carries MarkVar=mark.
// It is read in one call (proc.Environ): read in several across an exec, an
// environment loses its tail, where the mark may be.
func hasMark(pid int, mark string) bool {
	b, _ := proc.Environ(pid)
	if len(b) == 0 {
		return false
	}
	want := []byte(MarkVar + "=" + mark)
	for _, kv := range bytes.Split(b, []byte{0}) {
		if bytes.Equal(kv, want) {
			return true
		}
	}
	return false
}

// outsideGroup finds the processes a plugin (leader pid = pgid) started
// that are not in its group: its descendants by parent link, and any
// process carrying its mark.
func outsideGroup(pgid int, mark string) []procInfo {
	procs := allProcs()
	kids := map[int][]procInfo{}
	for _, p := range procs {
		kids[p.ppid] = append(kids[p.ppid], p)
	}
	seen := map[int]bool{}
	var out []procInfo
	add := func(p procInfo) {
		if !seen[p.pid] && p.pgid != pgid && p.pid != os.Getpid() {
			seen[p.pid] = true
			out = append(out, p)
		}
	}
	queue := []int{pgid}
	visited := map[int]bool{pgid: true}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, k := range kids[pid] {
			if visited[k.pid] {
				continue
			}
			visited[k.pid] = true
			add(k)
			queue = append(queue, k.pid)
		}
	}
	for _, p := range procs {
		if hasMark(p.pid, mark) {
			add(p)
		}
	}
	return out
}

// marked lists the live processes that carry mark.
func marked(mark string) []procInfo {
	var out []procInfo
	for _, p := range allProcs() {
		if p.pid != os.Getpid() && hasMark(p.pid, mark) {
			out = append(out, p)
		}
	}
	return out
}

// groupLive reports whether process group pgid has a live member.
func groupLive(pgid int) bool {
	for _, p := range allProcs() {
		if p.pgid == pgid {
			return true
		}
	}
	return false
}

// killPid kills a process the plugin left behind: the suite cleans up
// after the plugin it ran.
func killPid(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }
