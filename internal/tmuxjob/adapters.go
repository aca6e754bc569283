package tmuxjob

import (
	"embed"
	"path"
	"slices"
	"strings"

	"github.com/mu-org/mu-plugins/protocol"
)

// An adapter wires a coding-agent CLI to the harness contract
// (docs/harness.md "Adapters"): a POSIX sh program, built from the parts
// under adapters/, that job.start writes into the job's directory
// (`harness`) and the wrapper runs in the pane instead of spec.cmd. The
// adapter reads spec.cmd (the job's `cmd` file) as the CLI's command line
// and appends its own arguments to it.
//
//go:embed adapters/*.sh adapters/*.awk
var adapterFS embed.FS

type adapter struct {
	// parts are the files under adapters/ the program is made of, in order.
	parts []string
	// roles are the JobSpec roles the adapter enforces with the CLI's own
	// settings.
	roles []string
}

// adapters are the harnesses this package knows, by the name mu's
// JobSpec.harness (or the program spec.cmd runs) gives.
var adapters = map[string]adapter{
	"codex":        {parts: []string{"lib.sh", "json.awk", "codex.sh", "print.sh"}, roles: []string{"full-access", "read-only"}},
	"claude":       {parts: []string{"lib.sh", "json.awk", "onboard.awk", "claude.sh"}, roles: []string{"full-access", "read-only"}},
	"claude-print": {parts: []string{"lib.sh", "json.awk", "claude-print.sh", "print.sh"}, roles: []string{"full-access", "read-only"}},
}

// Harnesses lists the harness names this package wires itself, sorted.
func Harnesses() []string {
	var n []string
	for k := range adapters {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

// harnessOf is the adapter a spec selects: spec.harness when it names
// one, else the program spec.cmd runs; "" when neither is known (the
// agent program then follows the contract itself).
func harnessOf(s protocol.JobSpec) string {
	if _, ok := adapters[s.Harness]; ok {
		return s.Harness
	}
	if p := programOf(s.Cmd); p != "" {
		if _, ok := adapters[p]; ok {
			return p
		}
	}
	return ""
}

// programOf is the base name of the program a simple command line runs:
// its first word after any NAME=value assignments and an `exec` or `env`,
// with quotes removed. "" when there is none.
func programOf(cmd string) string {
	for _, w := range strings.Fields(cmd) {
		w = strings.NewReplacer(`'`, "", `"`, "", `\`, "").Replace(w)
		if w == "exec" || w == "env" || w == "command" {
			continue
		}
		if i := strings.IndexByte(w, '='); i > 0 && !strings.ContainsRune(w[:i], '/') {
			continue
		}
		return path.Base(w)
	}
	return ""
}

// adapterScript is the adapter's program ("" for no adapter); ownsHome
// (Options.OwnsHome) sets its OWNS_HOME=1.
func adapterScript(name string, ownsHome bool) string {
	a, ok := adapters[name]
	if !ok {
		return ""
	}
	var b strings.Builder
	for _, p := range a.parts {
		body, err := adapterFS.ReadFile("adapters/" + p)
		if err != nil {
			panic(err)
		}
		if strings.HasSuffix(p, ".awk") {
			// An awk program travels as a shell variable the parts use.
			name := strings.TrimSuffix(p, ".awk")
			b.WriteString(name + "_awk=" + shQuote(string(body)) + "\n")
			continue
		}
		b.Write(body)
		b.WriteString("\n")
		if p == "lib.sh" && ownsHome {
			b.WriteString("OWNS_HOME=1\n")
		}
	}
	return b.String()
}

// checkRole refuses a role the selected harness does not enforce: only an
// adapter whose CLI can enforce read-only takes it; every harness takes
// full-access.
func checkRole(harness, role string) error {
	if role == "" || role == "full-access" {
		return nil
	}
	if a, ok := adapters[harness]; ok && slices.Contains(a.roles, role) {
		return nil
	}
	known := []string{}
	for _, n := range Harnesses() {
		if slices.Contains(adapters[n].roles, role) {
			known = append(known, n)
		}
	}
	e := protocol.Errorf(protocol.Permanent, "job.start: the role %q is enforced only by the harnesses %s; this job's harness (%s) takes only full-access",
		role, strings.Join(known, ", "), orNone(harness))
	e.Remedy = "spawn it with the full-access role, or run an agent CLI whose adapter enforces " + role + " (docs/harness.md)"
	return e
}

func orNone(h string) string {
	if h == "" {
		return "an agent following docs/harness.md itself"
	}
	return h
}
