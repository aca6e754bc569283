package tmuxjob

import (
	"context"
	"sort"
	"strings"

	"github.com/mu-org/mu-plugins/protocol"
)

// CheckSteps is job.checkSteps for any phase: whether the host has what
// jobs need (tmux 3.2+, the scripts' tools, a writable state root). Step
// names: tmux, tools, state-root. A failing step's detail ends with its
// remedy: the package to install, or Options.RootRemedy.
func (j *Jobs) CheckSteps(ctx context.Context, phase string) ([]protocol.Step, error) {
	o, err := j.run(ctx, "check", "0", nil)
	if err != nil {
		return []protocol.Step{{Step: "tmux", OK: protocol.StepFailed, Detail: err.Error()}}, nil
	}
	var steps []protocol.Step
	for _, name := range []string{"tmux", "tools", "state-root"} {
		s := protocol.Step{Step: name, OK: protocol.StepSkipped, Detail: "not reported"}
		for _, l := range o.all("step") {
			n, rest, _ := strings.Cut(l, " ")
			if n != name {
				continue
			}
			ok, detail, _ := strings.Cut(rest, " ")
			s.OK, s.Detail = protocol.StepFailed, detail
			if ok == "ok" {
				s.OK = protocol.StepPassed
			} else {
				s.Detail += ". " + j.remedy(name, detail)
			}
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// toolPackages names the package that gives each tool the scripts need
// (Debian's name; Alpine's and Fedora's are the same).
var toolPackages = map[string]string{
	"flock": "util-linux", "base64": "coreutils", "mktemp": "coreutils", "tail": "coreutils",
	"head": "coreutils", "sed": "sed", "awk": "gawk (or mawk)", "grep": "grep",
}

// remedy says what to install (or do) for a failed step.
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
	}
	if j.opts.RootRemedy != "" {
		return j.opts.RootRemedy
	}
	return "Make the jobs directory writable by the host's user"
}
