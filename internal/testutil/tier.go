package testutil

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// TiersVar names the tiers of tests to run beyond the hermetic one, comma
// separated ("ssh,docker", "all"). Plain `go test ./...` runs the hermetic
// tier only: Go, git, tmux and sh. scripts/test.sh (make test, CI) asks for
// all. This file is the one place that reads it (docs/testing.md).
const TiersVar = "MU_TEST_TIERS"

// Tiers are the tiers a test may need, each with the part it needs.
var Tiers = map[string]string{
	"ssh":    "a real OpenSSH sshd on 127.0.0.1, as root (internal/testsshd)",
	"docker": "the real Docker Engine and the test image (internal/testimage)",
	"k8s":    "the project's test cluster (internal/testk8s, make k8s-up)",
	"slow":   "only time: minutes of hermetic checks, such as the contract suite against every faulty fake",
}

// asked reads TiersVar afresh each time: a read inside a test is what keys
// go test's cache on it.
func asked() (map[string]bool, error) {
	m := map[string]bool{}
	for _, name := range strings.Split(os.Getenv(TiersVar), ",") {
		switch name = strings.TrimSpace(name); {
		case name == "":
		case name == "all":
			for n := range Tiers {
				m[n] = true
			}
		case Tiers[name] == "":
			return nil, fmt.Errorf("%s=%q: no tier %q (the tiers: %s, or all)", TiersVar, os.Getenv(TiersVar), name, tierNames())
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

// TierAsked reports whether tier runs: MU_TEST_TIERS names it or says all.
// A name it does not know is an error (a typo must not skip a tier).
func TierAsked(tier string) (bool, error) {
	if Tiers[tier] == "" {
		return false, fmt.Errorf("testutil: no tier %q (the tiers: %s)", tier, tierNames())
	}
	m, err := asked()
	return m[tier], err
}

// tierSkip is the one skip reason of a tier not asked.
func tierSkip(tier string) string {
	return fmt.Sprintf("tier %s not asked: it needs %s; %s=%s (or all) runs it, as make test does", tier, Tiers[tier], TiersVar, tier)
}

// Tier is the first line of a test (or of a set-up helper) that needs
// tier's part. A tier not asked skips the test with one reason; a tier
// asked runs it, and a part that is missing then fails it (the set-up
// helpers fail, never skip). The line it logs names the tier for the time
// table (scripts/testtimes).
func Tier(t testing.TB, tier string) {
	t.Helper()
	ok, err := TierAsked(tier)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skip(tierSkip(tier))
	}
	t.Log(TierMark + tier)
}

// TierMark begins the line that says which tier a package or a test is in.
const TierMark = "mu-test-tier: "

// TierMain is the TestMain of a package whose every test is in tier:
//
//	func TestMain(m *testing.M) { testutil.TierMain(m, "docker", nil) }
//
// It runs the tests through Main (cmds and after as there) when the tier
// is asked; otherwise it prints the one skip reason and runs none (go test
// shows "[no tests to run]"). It never returns.
func TierMain(m *testing.M, tier string, cmds map[string]func(), after ...func()) {
	ok, err := TierAsked(tier)
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
	mainTier = tier
	Main(m, cmds, after...)
}
