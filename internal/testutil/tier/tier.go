// Package tier runs a test only when its tier is asked: MU_TEST_TIERS
// (Var) names the tiers beyond the hermetic one, which plain `go test
// ./...` runs alone. Need is a test's (or a set-up helper's) first line;
// Main is the TestMain of a package wholly in one tier. This package is
// the one place that reads the variable (docs/testing.md).
package tier

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/programs"
)

// Var names the tiers of tests to run beyond the hermetic one, comma
// separated ("ssh,docker", "all"). Plain `go test ./...` runs the hermetic
// tier only: Go, git, tmux and sh. scripts/test.sh (make test, CI) asks for
// all.
const Var = "MU_TEST_TIERS"

// Tiers are the tiers a test may need, each with the part it needs.
var Tiers = map[string]string{
	"ssh":    "a real OpenSSH sshd on 127.0.0.1, as root (internal/testsshd)",
	"docker": "the real Docker Engine and the test image (internal/testimage)",
	"k8s":    "the project's test cluster (internal/testk8s, make k8s-up)",
	"slow":   "only time: minutes of hermetic checks, such as the contract suite against every faulty fake",
}

// asked reads Var afresh each time: a read inside a test is what keys
// go test's cache on it.
func asked() (map[string]bool, error) {
	m := map[string]bool{}
	for _, name := range strings.Split(os.Getenv(Var), ",") {
		switch name = strings.TrimSpace(name); {
		case name == "":
		case name == "all":
			for n := range Tiers {
				m[n] = true
			}
		case Tiers[name] == "":
			return nil, fmt.Errorf("%s=%q: no tier %q (the tiers: %s, or all)", Var, os.Getenv(Var), name, tierNames())
		default:
			m[name] = true
		}
	}
	return m, nil
}

func tierNames() string {
	var ns []string
	for n := range Tiers {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return strings.Join(ns, ", ")
}

// Asked reports whether tier runs: MU_TEST_TIERS names it or says all.
// A name it does not know is an error (a typo must not skip a tier).
func Asked(tier string) (bool, error) {
	if Tiers[tier] == "" {
		return false, fmt.Errorf("tier: no tier %q (the tiers: %s)", tier, tierNames())
	}
	m, err := asked()
	return m[tier], err
}

// tierSkip is the one skip reason of a tier not asked.
func tierSkip(tier string) string {
	return fmt.Sprintf("tier %s not asked: it needs %s; %s=%s (or all) runs it, as make test does", tier, Tiers[tier], Var, tier)
}

// Need is the first line of a test (or of a set-up helper) that needs
// tier's part. A tier not asked skips the test with one reason; a tier
// asked runs it, and a part that is missing then fails it (the set-up
// helpers fail, never skip). The line it logs names the tier for the time
// table (scripts/testtimes).
func Need(t testing.TB, tier string) {
	t.Helper()
	ok, err := Asked(tier)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skip(tierSkip(tier))
	}
	t.Log(Mark + tier)
}

// Mark begins the line that says which tier a package or a test is in
// (internal/testtimes reads it).
const Mark = "mu-test-tier: "

// Main is the TestMain of a package whose every test is in tier:
//
//	func TestMain(m *testing.M) { tier.Main(m, "docker", nil) }
//
// It runs the tests through programs.Main (cmds and after as there) when
// the tier is asked; otherwise it prints the one skip reason and runs none
// (go test shows "[no tests to run]"). It never returns.
func Main(m *testing.M, tier string, cmds map[string]func(), after ...func()) {
	ok, err := Asked(tier)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if !ok {
		// Not m.Run: a run without the test log is never cached, so the
		// skip is not replayed once the tier is asked. No test runs, so
		// none runs this binary as one of cmds.
		fmt.Printf("SKIP %s\n", tierSkip(tier))
		fmt.Println("testing: warning: no tests to run") // go test: "[no tests to run]"
		fmt.Println("PASS")
		os.Exit(0)
	}
	if _, isCmd := cmds[filepath.Base(os.Args[0])]; !isCmd { // a command's stdout is its own
		fmt.Printf("%s%s\n", Mark, tier)
	}
	programs.Main(m, cmds, after...)
}
