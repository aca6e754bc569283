package ssh

import (
	_ "embed"
	"strings"
)

// The shell this backend runs on a host lives in scripts/*.sh (linted by
// shellcheck: scripts/lint.sh). Values reach a script only as its
// arguments: the wrapper's SECS and DIR and a command's argv on the
// command line, single-quoted; a script's own text on stdin.
var (
	//go:embed scripts/arm.sh
	armSh string
	//go:embed scripts/exec.sh
	execSh string
	//go:embed scripts/disarm.sh
	disarmSh string
	//go:embed scripts/kill.sh
	killSh string
	// probeScript is the reach phase's probe: the shell, git and its
	// version, and whether the login directory is writable.
	//
	//go:embed scripts/probe.sh
	probeScript string
)

// oneLine is a script as the one line it must be where it travels inside
// the SSH command line (the login shell, whichever it is, reads that line
// first) or as one command of the control shell: its comment lines are
// dropped and its backslash-newline continuations joined, as the shell's
// own reader joins them. A script left with a newline is a bug: it panics.
func oneLine(name, text string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(text, "\n") {
		if !strings.HasPrefix(l, "#") {
			b.WriteString(l)
		}
	}
	s := strings.TrimSuffix(strings.ReplaceAll(b.String(), "\\\n", ""), "\n")
	if strings.Contains(s, "\n") {
		panic("ssh: scripts/" + name + " must be one line (continue its lines with a backslash)")
	}
	return s
}
