// Package creator identifies the plugin process that creates a host (a
// container, a pod), so that a lookup can tell a create still in flight
// from one whose plugin died: the provider records Process.String() on
// what it creates, and Of tells whether that process still runs.
package creator

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Process identifies the plugin process that creates a host:
// the kernel's boot, the pid namespace, the pid and the process's start
// time (clock ticks after boot, /proc/PID/stat field 22), so that a pid
// reused by another process does not pass for it. acquire records it on
// the host it creates; lookup asks whether it still runs, to tell
// an abandoned create from one in flight.
type Process struct {
	boot  string // /proc/sys/kernel/random/boot_id
	pidns string // the inode of /proc/self/ns/pid
	pid   int
	start uint64
}

// Liveness is what lookup can tell of a container's creator.
type Liveness int

const (
	Unknown Liveness = iota // another boot or machine, another pid namespace, or no label
	Alive
	Gone
)

// This is the running plugin's identity; its zero parts are unknown.
func This() Process {
	c := Process{pid: os.Getpid()}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		c.boot = strings.TrimSpace(string(b))
	}
	if l, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		c.pidns = strings.TrimSuffix(strings.TrimPrefix(l, "pid:["), "]")
	}
	c.start, _, _ = procStart(c.pid)
	return c
}

// String is the label's value: boot/pidns/pid/start.
func (c Process) String() string {
	return fmt.Sprintf("%s/%s/%d/%d", c.boot, c.pidns, c.pid, c.start)
}

// Known tells whether every part of the identity could be read.
func (c Process) Known() bool { return c.boot != "" && c.pidns != "" && c.pid > 0 && c.start > 0 }

func parse(s string) (Process, bool) {
	f := strings.Split(s, "/")
	if len(f) != 4 {
		return Process{}, false
	}
	pid, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[3], 10, 64)
	c := Process{boot: f[0], pidns: f[1], pid: pid, start: start}
	return c, err1 == nil && err2 == nil && c.Known()
}

// Of tells whether the creator recorded as label still runs, as
// seen from self: only a process of self's boot and pid namespace can be
// checked; anything else is unknown.
func Of(label string, self Process) Liveness {
	c, ok := parse(label)
	if !ok || !self.Known() || c.boot != self.boot || c.pidns != self.pidns {
		return Unknown
	}
	start, running, err := procStart(c.pid)
	switch {
	case err != nil && os.IsNotExist(err):
		return Gone
	case err != nil:
		return Unknown
	case start != c.start || !running:
		return Gone // the pid is another process's now, or a zombie
	}
	return Alive
}

// procStart reads a process's start time and whether it still runs (not a
// zombie) from /proc/PID/stat.
func procStart(pid int) (start uint64, running bool, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false, err
	}
	// The command name is in parentheses and may hold anything: the fields
	// after its last ')' are state (field 3) onwards.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, false, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	return start, f[0] != "Z" && f[0] != "X", err
}
