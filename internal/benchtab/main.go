// Command benchtab reads `go test -bench` output on stdin and prints, for
// every benchmark that ran ours beside a peer, the two figures and their
// ratio. Ours is the sub-benchmark named "plugin"; every other sibling is a
// peer. -pair OURS=PEER adds pairs of top-level benchmarks.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

type result struct {
	nsPerOp float64
	extra   []string // other metrics, as printed
}

var line = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(.*)$`)

type pairs []string

func (p *pairs) String() string     { return strings.Join(*p, ",") }
func (p *pairs) Set(s string) error { *p = append(*p, s); return nil }

func main() {
	var explicit pairs
	flag.Var(&explicit, "pair", "OURS=PEER: compare two top-level benchmarks (repeatable)")
	flag.Parse()
	res, order := parse(os.Stdin)
	printTable(os.Stdout, res, order, pairRows(res, order, explicit))
}

// parse reads go test's output: each benchmark's figures, and the order in
// which they ran. A name is prefixed with its package's last element (go
// test prints a package's "ok" after its benchmarks), so equal names in two
// packages stay apart.
func parse(r io.Reader) (map[string]result, []string) {
	res := map[string]result{}
	var order []string
	var pending []string // names read before their package's "ok" line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		text := sc.Text()
		if f := strings.Fields(text); len(f) >= 2 && (f[0] == "ok" || f[0] == "FAIL") {
			pkg := f[1][strings.LastIndexByte(f[1], '/')+1:]
			for _, n := range pending {
				r := res[n]
				delete(res, n)
				res[pkg+"."+n] = r
				for i := range order {
					if order[i] == n {
						order[i] = pkg + "." + n
					}
				}
			}
			pending = nil
			continue
		}
		m := line.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		if _, seen := res[m[1]]; !seen {
			order = append(order, m[1])
			pending = append(pending, m[1])
		}
		res[m[1]] = result{nsPerOp: ns, extra: strings.Fields(m[3])}
	}
	return res, order
}

// row is one comparison: ours beside a peer.
type row struct{ name, ours, peer string }

// pairRows pairs every "plugin" sub-benchmark with its siblings, then the
// explicit OURS=PEER pairs of top-level benchmarks.
func pairRows(res map[string]result, order []string, explicit pairs) []row {
	var rows []row
	for _, name := range order {
		parent, sub, ok := strings.Cut(name, "/")
		if !ok || sub != "plugin" {
			continue
		}
		var peers []string
		for _, other := range order {
			if p, s, ok := strings.Cut(other, "/"); ok && p == parent && s != "plugin" {
				peers = append(peers, other)
			}
		}
		sort.Strings(peers)
		for _, p := range peers {
			rows = append(rows, row{parent, name, p})
		}
	}
	for _, p := range explicit {
		o, q, _ := strings.Cut(p, "=")
		for _, name := range order { // OURS and PEER in the same package
			if pkg, n, _ := strings.Cut(name, "."); n == o {
				if _, ok := res[pkg+"."+q]; ok {
					rows = append(rows, row{name, name, pkg + "." + q})
				}
			}
		}
	}
	return rows
}

// printTable writes the ratio table, then every benchmark's other figures.
func printTable(w io.Writer, res map[string]result, order []string, rows []row) {
	fmt.Fprintf(w, "%-34s %-28s %12s %12s %7s\n", "benchmark", "peer", "ours", "peer", "ratio")
	for _, r := range rows {
		a, b := res[r.ours], res[r.peer]
		peer := r.peer
		if i := strings.IndexByte(peer, '/'); i >= 0 {
			peer = peer[i+1:]
		}
		fmt.Fprintf(w, "%-34s %-28s %12s %12s %6.2fx\n", strings.Replace(r.name, "Benchmark", "", 1), strings.Replace(peer, "Benchmark", "", 1), dur(a.nsPerOp), dur(b.nsPerOp), a.nsPerOp/b.nsPerOp)
	}
	fmt.Fprintln(w, "\nother figures:")
	for _, name := range order {
		if r := res[name]; len(r.extra) > 0 {
			fmt.Fprintf(w, "  %-50s %s  %s\n", strings.Replace(name, "Benchmark", "", 1), dur(r.nsPerOp), strings.Join(r.extra, " "))
		}
	}
}

func dur(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2fs", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2fms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1fµs", ns/1e3)
	}
	return fmt.Sprintf("%.0fns", ns)
}
