// Package layers states the tree's layers, what each may import, and
// checks the module's imports against them (its test runs the check over
// `go list`, as part of `go test ./...`). docs/architecture.md is the same
// table in prose.
package layers

import (
	"fmt"
	"sort"
	"strings"
)

// A Layer is a set of packages, named by path prefix inside the module. A
// package may import its own layer's packages and any lower layer's
// (a lower Rank), never a higher one's.
type Layer struct {
	Name     string
	Rank     int
	Packages []string // path prefixes inside the module: "internal/proc" holds internal/proc/...
	// Isolated: the layer's units (the first two path elements, e.g.
	// backend/ssh) never import each other: each plugin is a leaf.
	Isolated bool
	// TestOnly: only tests and the layer's own packages import it.
	TestOnly bool
	What     string
}

// Layers is the tree, lowest first.
var Layers = []Layer{
	{Name: "schema", Rank: 0, Packages: []string{"schemas"},
		What: "the protocol's JSON Schema, embedded; its sha256 is the handshake's schema"},
	{Name: "protocol", Rank: 1, Packages: []string{"protocol"},
		What: "wire types, the one error model, the declaration, the plugin-side server (Serve), and the caller side that drives a plugin as mu does"},
	{Name: "base", Rank: 2, Packages: []string{"internal/proc", "internal/outcap", "internal/creator", "internal/hostresult", "internal/cli", "internal/benchtab", "internal/safefile", "internal/testtimes"},
		What: "small libraries every plugin may use: process groups, bounded output, the creator's identity, acquire results, the command line, configuration files read safely"},
	{Name: "engine", Rank: 3, Packages: []string{"internal/gitlink", "internal/execchan", "internal/sshclient", "internal/tmuxjob"},
		What: "the engines the plugins are built from: the link's git conventions, exec channels into a sandbox, the OpenSSH-compatible client, jobs and their channel under tmux"},
	{Name: "provider", Rank: 4, Packages: []string{"internal/sandbox"},
		What: "what a provider of sandbox hosts has in common (docker, k8s)"},
	{Name: "contract", Rank: 5, Packages: []string{"contract"},
		What: "the contract suite any plugin author runs against a plugin, through protocol/caller"},
	{Name: "testsupport", Rank: 6, TestOnly: true, Packages: []string{"internal/testutil", "internal/testsshd", "internal/testimage", "internal/testk8s", "internal/layers"},
		What: "what tests share: helpers, the one way a test drives a plugin, real sshd, the Docker test image, the test cluster, this check"},
	{Name: "backend", Rank: 7, Isolated: true, Packages: []string{"backend"},
		What: "the plugins, one package each (ssh, docker, k8s, fake)"},
	{Name: "top", Rank: 8, Isolated: true, Packages: []string{"cmd", "integration"},
		What: "each binary's main (cmd/mu-plugin-*), cmd's transcripts, and the end-to-end suite (integration, tests only)"},
}

// Of returns the layer holding pkg (a path inside the module), by its
// longest matching prefix.
func Of(pkg string) (Layer, bool) {
	best, n := Layer{}, -1
	for _, l := range Layers {
		for _, p := range l.Packages {
			if (pkg == p || strings.HasPrefix(pkg, p+"/")) && len(p) > n {
				best, n = l, len(p)
			}
		}
	}
	return best, n >= 0
}

// unit is a package's unit within an isolated layer: backend/ssh for
// backend/ssh/..., cmd/mu-plugin-ssh for cmd/mu-plugin-ssh/...
func unit(pkg string) string {
	parts := strings.SplitN(pkg, "/", 3)
	if len(parts) < 2 {
		return pkg
	}
	return parts[0] + "/" + parts[1]
}

// An Import is one edge: From imports To (paths inside the module); Test
// when only From's tests do.
type Import struct {
	From, To string
	Test     bool
}

// Check returns one message per import that breaks the layering, naming
// both packages and their layers, sorted; none when the tree is one way
// down. A package in no layer is a violation too: a new package gets its
// place in Layers.
func Check(imports []Import) []string {
	var bad []string
	seen := map[string]bool{}
	for _, im := range imports {
		from, okf := Of(im.From)
		to, okt := Of(im.To)
		for _, p := range []struct {
			pkg string
			ok  bool
		}{{im.From, okf}, {im.To, okt}} {
			if !p.ok && !seen[p.pkg] {
				seen[p.pkg] = true
				bad = append(bad, fmt.Sprintf("%s is in no layer: give it one in internal/layers.Layers (and docs/architecture.md)", p.pkg))
			}
		}
		if !okf || !okt || unit(im.From) == unit(im.To) && from.Name == to.Name && from.Isolated {
			continue
		}
		if why := breaks(im, from, to); why != "" {
			bad = append(bad, fmt.Sprintf("%s (%s) imports %s (%s)%s: %s", im.From, from.Name, im.To, to.Name, testNote(im.Test), why))
		}
	}
	sort.Strings(bad)
	return bad
}

// breaks says why one import breaks the layering, or "".
func breaks(im Import, from, to Layer) string {
	switch {
	case to.TestOnly && !im.Test && from.Name != to.Name:
		return "only tests may import the " + to.Name + " layer"
	case to.TestOnly:
		return ""
	case to.Rank > from.Rank:
		return fmt.Sprintf("an arrow back up (%s is layer %d, above %s's %d)", to.Name, to.Rank, from.Name, from.Rank)
	case from.Name == to.Name && from.Isolated && unit(im.From) != unit(im.To):
		return "the " + from.Name + " layer's packages never import each other (" + unit(im.From) + ", " + unit(im.To) + ")"
	}
	return ""
}

func testNote(test bool) string {
	if test {
		return " in its tests"
	}
	return ""
}
