// Command testtimes reads `go test -json` on stdin and prints what go test
// prints without -json and -v (each package's closing line; the output of
// a test that failed and of a package that failed; build errors), then a
// table of each package's wall time and each tier's (internal/testutil/tier).
//
// A package's tier is the one its TestMain gave tier.Main, or
// "hermetic"; a test that called tier.Need counts in that tier and
// its time moves there from its package's. scripts/test.sh pipes make
// test's go test through it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// TierMark is tier.Mark (testtimes stays free of test code).
const TierMark = "mu-test-tier: "

type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type test struct {
	out     []string
	tier    string
	elapsed float64
	done    bool // it passed, failed or skipped
}

type pkg struct {
	name     string
	tier     string
	out      []string // package-level lines (no test)
	tests    map[string]*test
	order    []string
	elapsed  float64
	result   string // pass, fail, skip (no test files)
	failed   []string
	skipped  bool // its tier was not asked
	pass     int
	skip     int
	started  time.Time
	finished time.Time
}

func main() {
	pkgs, order, first, last := read(os.Stdin, os.Stdout)
	fmt.Println()
	printTables(os.Stdout, pkgs, order, last.Sub(first))
}

// read passes go test's lines through to w as they come and returns every
// package, in the order they finished, and the first and last event times.
func read(r io.Reader, w io.Writer) (map[string]*pkg, []string, time.Time, time.Time) {
	pkgs := map[string]*pkg{}
	var order []string
	var first, last time.Time
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line) // not an event: go test's own line
			continue
		}
		if !e.Time.IsZero() {
			if first.IsZero() || e.Time.Before(first) {
				first = e.Time
			}
			if e.Time.After(last) {
				last = e.Time
			}
		}
		if e.Action == "build-output" {
			fmt.Fprint(w, e.Output)
			continue
		}
		if e.Package == "" {
			continue
		}
		p := pkgs[e.Package]
		if p == nil {
			p = &pkg{name: e.Package, tier: "hermetic", tests: map[string]*test{}, started: e.Time}
			pkgs[e.Package] = p
		}
		if p.add(e, w) {
			order = append(order, e.Package)
		}
	}
	return pkgs, order, first, last
}

// add takes one event; it reports whether the package finished.
func (p *pkg) add(e event, w io.Writer) bool {
	if e.Test == "" {
		return p.addPackage(e, w)
	}
	top, _, _ := strings.Cut(e.Test, "/")
	t := p.tests[top]
	if t == nil {
		t = &test{}
		p.tests[top] = t
		p.order = append(p.order, top)
	}
	switch e.Action {
	case "output":
		t.out = append(t.out, e.Output)
		if _, tier, ok := strings.Cut(e.Output, TierMark); ok {
			t.tier = strings.TrimSpace(tier)
		}
	case "pass", "fail", "skip":
		if e.Test != top {
			break
		}
		t.elapsed, t.done = e.Elapsed, true
		switch e.Action {
		case "fail":
			p.failed = append(p.failed, top)
		case "pass":
			p.pass++
		default:
			p.skip++
		}
	}
	return false
}

func (p *pkg) addPackage(e event, w io.Writer) bool {
	switch e.Action {
	case "output":
		p.out = append(p.out, e.Output)
		if tier, ok := strings.CutPrefix(e.Output, TierMark); ok {
			p.tier = strings.TrimSpace(tier)
		}
		if rest, ok := strings.CutPrefix(e.Output, "SKIP tier "); ok { // tier.Main, not asked
			p.tier, _, _ = strings.Cut(rest, " ")
			p.skipped = true
		}
		return false
	case "pass", "fail", "skip":
		p.result, p.elapsed, p.finished = e.Action, e.Elapsed, e.Time
		p.print(w)
		return true
	}
	return false
}

// print writes what go test prints for the package without -v: a failed
// test's output and its package's lines when it failed, else only its
// closing line (and a tier's skip reason).
func (p *pkg) print(w io.Writer) {
	if p.result != "fail" {
		for _, l := range p.out {
			if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "?") || strings.HasPrefix(l, "SKIP tier") {
				fmt.Fprint(w, l)
			}
		}
		return
	}
	for _, name := range p.order { // failed, or cut short (a panic, the timeout)
		if t := p.tests[name]; !t.done || slices.Contains(p.failed, name) {
			for _, l := range t.out {
				fmt.Fprint(w, l)
			}
		}
	}
	for _, l := range p.out {
		if !strings.HasPrefix(l, TierMark) {
			fmt.Fprint(w, l)
		}
	}
}
