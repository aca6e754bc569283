// Package contract is the plugin contract suite: every rule of the plugin
// protocol v1 that a caller can observe, run as named checks against a
// plugin binary, the way mu drives it (protocol/caller). Run is the suite;
// Call is the one-call wire tool; Demo drives mu-plugin-fake through every
// seam. docs/contract.md lists the checks.
package contract

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Status is a check's outcome.
type Status string

// The three outcomes.
const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
)

// Result is one check's outcome. Reason says why it failed or was skipped;
// Wire is an excerpt of the wire transcript for a failure.
type Result struct {
	Name   string
	Status Status
	Reason string
	Wire   []string
	// Elapsed is how long the check took, its plugins' stops included.
	Elapsed time.Duration
}

// Options configure one run of the suite.
type Options struct {
	// Argv is the plugin's registered argv: an absolute path to
	// mu-plugin-NAME, then its arguments.
	Argv []string
	// Name is the registered name; "" takes it from the basename.
	Name string
	// Run selects the checks whose name matches this regexp ("" = all).
	Run string
	// Host is target.host.name for link, job and channel calls on a host
	// that is not acquired (default "contract").
	Host string
	// Params is host.acquire's params (mu's --param map).
	Params map[string]string
	// Env is added to the plugin's environment (KEY=VALUE).
	Env []string
	// JobCmd is the spec.cmd of the jobs the job and channel checks start
	// (default "true"): for a backend that runs a real command, one that
	// runs an agent following its channel's contract (for
	// mu-plugin-docker, internal/tmuxjob/agent's test agent).
	JobCmd string
	// JobHarness is the spec.harness of those jobs (default "contract"):
	// for a kind that wires known agent CLIs itself (tmuxjob's adapters),
	// the one to run.
	JobHarness string
	// Timeout bounds each check (default 2 minutes).
	Timeout time.Duration
	// Verbose prints the whole wire transcript of a failed check, not only
	// its last lines.
	Verbose bool
	// Out, if set, gets one line per check as it ends, then the summary.
	Out io.Writer
}

// Report is a run's outcome.
type Report struct {
	Results []Result
	Elapsed time.Duration
	// RunID is this run's random id: every key, msgId, agent name and path
	// the run made carries it.
	RunID string
}

// Counts returns how many checks passed, failed and were skipped.
func (r *Report) Counts() (passed, failed, skipped int) {
	for _, x := range r.Results {
		switch x.Status {
		case Pass:
			passed++
		case Fail:
			failed++
		case Skip:
			skipped++
		}
	}
	return
}

// Get returns the named check's result.
func (r *Report) Get(name string) (Result, bool) {
	for _, x := range r.Results {
		if x.Name == name {
			return x, true
		}
	}
	return Result{}, false
}

// Slowest names the checks that took over 3 s, for a log line ("" when
// none did).
func (r *Report) Slowest() string {
	var out []string
	for _, x := range r.Results {
		if x.Elapsed > 3*time.Second {
			out = append(out, fmt.Sprintf("%s %s", x.Name, x.Elapsed.Round(100*time.Millisecond)))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (slow: " + strings.Join(out, ", ") + ")"
}

// Summary is the closing line: "N passed, N failed, N skipped".
func (r *Report) Summary() string {
	p, f, s := r.Counts()
	return fmt.Sprintf("%d passed, %d failed, %d skipped", p, f, s)
}

// Seam names a check's need.
const (
	seamNone    = ""
	seamLink    = "link"
	seamHost    = "host"
	seamJob     = "job"
	seamChannel = "channel"
)

// check is one rule. needs lists the seams the plugin must declare for it
// to apply (otherwise it skips); summary checks run after every other one,
// since they judge the whole run.
type check struct {
	name    string
	needs   []string
	summary bool
	run     func(t *T)
}

// registry is every check, in run order.
func registry() []check {
	var all []check
	all = append(all, registrationChecks()...)
	all = append(all, handshakeChecks()...)
	all = append(all, wireChecks()...)
	all = append(all, processChecks()...)
	all = append(all, linkChecks()...)
	all = append(all, cutChecks()...)
	all = append(all, hostChecks()...)
	all = append(all, jobChecks()...)
	all = append(all, channelChecks()...)
	all = append(all, wireSummaryChecks()...)
	all = append(all, processSummaryChecks()...)
	return all
}

// Names lists every check's name, in run order.
func Names() []string {
	var out []string
	for _, c := range registry() {
		out = append(out, c.name)
	}
	return out
}

// Run runs the selected checks against the plugin, in order, each to its
// end, and reports every one. The error is for options that cannot run at
// all (no argv, a bad --run); a plugin that breaks rules is a report with
// failures.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if len(opts.Argv) == 0 {
		return nil, fmt.Errorf("no plugin: give its argv after --")
	}
	var sel *regexp.Regexp
	if opts.Run != "" {
		var err error
		if sel, err = regexp.Compile(opts.Run); err != nil {
			return nil, fmt.Errorf("--run: %w", err)
		}
	}
	if opts.Name == "" {
		opts.Name = strings.TrimPrefix(filepath.Base(opts.Argv[0]), "mu-plugin-")
	}
	if opts.Host == "" {
		opts.Host = "contract"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	s := newSuite(opts)
	defer s.cleanup()
	start := time.Now()
	rep := &Report{RunID: s.run}
	for _, c := range registry() {
		if sel != nil && !sel.MatchString(c.name) {
			continue
		}
		r := s.runCheck(ctx, c)
		rep.Results = append(rep.Results, r)
		if opts.Out != nil {
			printResult(opts.Out, r, s.canary)
		}
	}
	rep.Elapsed = time.Since(start)
	if opts.Out != nil {
		fmt.Fprintln(opts.Out, rep.Summary())
	}
	return rep, nil
}

// printResult writes one check's line (and a failure's wire excerpt). The
// canary is masked: the report names a leak, it does not repeat it.
func printResult(w io.Writer, r Result, canary string) {
	mask := func(s string) string { return strings.ReplaceAll(s, canary, "<canary>") }
	switch r.Status {
	case Pass:
		fmt.Fprintf(w, "PASS %s\n", r.Name)
	default:
		// One line per check: a reason's own line breaks are folded.
		reason := strings.Join(strings.Fields(strings.ReplaceAll(r.Reason, "\n", " / ")), " ")
		fmt.Fprintf(w, "%s %s: %s\n", r.Status, r.Name, mask(reason))
	}
	for _, l := range r.Wire {
		fmt.Fprintf(w, "    %s\n", mask(l))
	}
}
