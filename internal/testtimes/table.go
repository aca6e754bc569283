package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// printTables writes each package's wall time, slowest first, then each
// tier's: its packages' times, plus its tests' in other tiers' packages.
func printTables(w io.Writer, pkgs map[string]*pkg, order []string, wall time.Duration) {
	tiers := map[string]float64{}
	tierPkgs := map[string]int{}
	names := slices.Clone(order)
	slices.SortStableFunc(names, func(a, b string) int {
		return cmpDesc(pkgs[a].elapsed, pkgs[b].elapsed)
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "package\ttier\twall s\tpass\tfail\tskip\t")
	for _, n := range names {
		p := pkgs[n]
		own := p.elapsed
		for _, t := range p.tests {
			if t.tier != "" && t.tier != p.tier {
				tiers[t.tier] += t.elapsed
				own -= t.elapsed
			}
		}
		tiers[p.tier] += max(own, 0)
		tierPkgs[p.tier]++
		if p.result == "skip" && len(p.tests) == 0 {
			continue // no test files
		}
		tier := p.tier
		if p.skipped {
			tier += " (not asked)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%d\t%d\t%d\t\n", short(n), tier, p.elapsed, p.pass, len(p.failed), p.skip)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tn := make([]string, 0, len(tiers))
	for t := range tiers {
		tn = append(tn, t)
	}
	slices.SortFunc(tn, func(a, b string) int { return cmpDesc(tiers[a], tiers[b]) })
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tier\tpackages\twall s\t")
	for _, t := range tn {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t\n", t, tierPkgs[t], tiers[t])
	}
	tw.Flush()
	fmt.Fprintf(w, "go test: %.1f s of wall clock (packages overlap: go test -p)\n", wall.Seconds())
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// short drops the module path.
func short(pkg string) string {
	const mod = "github.com/mu-org/mu-plugins/"
	if s, ok := strings.CutPrefix(pkg, mod); ok {
		return s
	}
	return pkg
}
