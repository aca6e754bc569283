// Package osproc finds a test's processes on this machine: whether one is
// alive (Alive), and the ones whose environment holds a mark (Procs).
package osproc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Alive reports whether process pid is alive: it exists and is no zombie.
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state …; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// Procs lists the live processes but this one whose environment holds a
// variable (KEY=VALUE) that match accepts: what a test's runs left.
func Procs(match func(kv string) bool) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !Alive(pid) {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if match(kv) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}
