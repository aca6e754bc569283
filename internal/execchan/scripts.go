package execchan

import (
	_ "embed"
	"strconv"
	"time"
)

// The shell the exec channels run on a host lives in scripts/*.sh (linted
// by shellcheck: scripts/lint.sh). Each runs as a constant argv string
// (`/bin/sh -c SCRIPT NAME ARGS…`); values travel as its arguments or on
// its stdin, never spliced into a script.
var (
	//go:embed scripts/kill.sh
	killSh string
	//go:embed scripts/agent.sh
	agentSh string
	//go:embed scripts/stop.sh
	stopSh string
	// HomeScript runs its arguments in the login directory.
	//
	//go:embed scripts/home.sh
	HomeScript string
)

// AgentScript is the channel's loop (kill.sh's k, then agent.sh), which a
// backend starts as `/bin/sh -c AgentScript`. A request is the line
// "TOKEN MARK LEN [STDINLEN SEP]\n" (TOKEN ends the run's output; MARK,
// another random value, marks its processes, so a script that prints its
// environment cannot end its own output early), the cwd on a line of its
// own, then LEN bytes of payload, read with head -c (which reads no
// further), then, with STDINLEN, that many bytes of the run's stdin.
//
// Without STDINLEN the payload is a script, run as `sh -c SCRIPT` (an argv
// string: never spliced into a command line) with stdin from /dev/null.
// With it (a Runner's run) the payload is an argv, each argument ended by
// SEP, a byte that no argument holds. The loop splits it with the shell's
// own field splitting (IFS set to the separator, globbing off: one pass,
// no fork) and execs "$@"; the stdin bytes go to a file of the loop's own
// first (they may hold any byte) and feed the run. Either runs in cwd,
// resolved from the login directory. After the run, the /proc scan for
// leftovers (a grep costing ~4 ms) runs only when the host's process list
// is not what it was before the run.
var AgentScript = killSh + agentSh

// StopScript kills every process marked with run $1 (kill.sh's k): it
// exits 0 once none is left. A backend runs it as `/bin/sh -c StopScript
// sh MARK` over an exec of its own, beside the channel.
var StopScript = killSh + stopSh

//go:embed scripts/host.sh
var hostSh string

// HostCommand is a host's main process (host.sh): it ends the host at
// deadlineAt (Unix ms; nil: none) and once it has been idle for idle (0:
// never), so that the deadlineAt and idleReclaimMs an acquire reports hold
// with no daemon watching. Both travel as arguments, in whole seconds
// rounded up.
func HostCommand(deadlineAt *int64, idle time.Duration) []string {
	var dl int64
	if deadlineAt != nil {
		dl = (*deadlineAt + 999) / 1000
	}
	secs := int64((idle + time.Second - 1) / time.Second)
	return []string{"/bin/sh", "-c", hostSh, "mu-host", strconv.FormatInt(dl, 10), strconv.FormatInt(secs, 10)}
}
