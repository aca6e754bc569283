package caller

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// groupMembers lists the live (non-zombie) processes of process group pgid.
// It reads /proc; without /proc it falls back to kill(-pgid, 0), which
// cannot tell zombies apart and reports one unnamed member.
func groupMembers(pgid int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		if syscall.Kill(-pgid, 0) == nil {
			return []int{-1}
		}
		return nil
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil
	}
	var out []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		pg, state, ok := procStat(pid)
		if ok && pg == pgid && state != 'Z' && state != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// procStat reads a process's state and process group from /proc/<pid>/stat.
func procStat(pid int) (pgrp int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return pg, f[0][0], true
}

// killGroup sends SIGKILL to the whole group and returns how many live
// processes it held.
func killGroup(pgid int) int {
	n := len(groupMembers(pgid))
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && errors.Is(err, syscall.ESRCH) {
		return 0
	}
	return n
}

// GroupEmpty reports whether process group pgid holds no live process: the
// proof the replay rules ask for that the plugin process a call went to is
// gone. A pgid of 0 or less is never proven empty.
func GroupEmpty(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	return len(groupMembers(pgid)) == 0
}
