package tmuxjob

import (
	"sort"
	"strings"

	"github.com/mu-org/mu-plugins/protocol"
)

// withRemedies ends each failed step's detail with its remedy: the package
// to install, or Options.RootRemedy for the state root.
func (j *Jobs) withRemedies(steps []protocol.Step) []protocol.Step {
	for i, s := range steps {
		if s.OK == protocol.StepFailed {
			if r := j.remedy(s.Step, s.Detail); r != "" {
				steps[i].Detail += ". " + r
			}
		}
	}
	return steps
}

// toolPackages names the package that gives each tool the scripts need
// (Debian's name; Alpine's and Fedora's are the same).
var toolPackages = map[string]string{
	"flock": "util-linux", "base64": "coreutils", "mktemp": "coreutils", "tail": "coreutils",
	"head": "coreutils", "sed": "sed", "awk": "gawk (or mawk)", "grep": "grep",
}

// remedy says what to install (or do) for a failed step; "" when there is
// nothing to add.
func (j *Jobs) remedy(step, detail string) string {
	switch step {
	case "tmux":
		return "Install tmux 3.2 or later: apt-get install tmux (Debian, Ubuntu), apk add tmux (Alpine), dnf install tmux (Fedora, RHEL)"
	case "tools":
		if strings.Contains(detail, "-z") {
			return "Install GNU grep: apt-get install grep, apk add grep (busybox's grep lacks -z)"
		}
		pkgs := map[string]bool{}
		for _, t := range strings.Fields(strings.TrimPrefix(detail, "missing:")) {
			if p := toolPackages[t]; p != "" {
				pkgs[p] = true
			}
		}
		names := make([]string, 0, len(pkgs))
		for p := range pkgs {
			names = append(names, p)
		}
		sort.Strings(names)
		return "Install the package(s): " + strings.Join(names, ", ")
	case "state-root":
		if j.opts.RootRemedy != "" {
			return j.opts.RootRemedy
		}
		return "Make the jobs directory writable by the host's user"
	}
	return ""
}
