package contract

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The number of checks the docs quote is the suite's own (issue 26: the
// docs said 67 and 39 long after checks were added). A figure measured
// on an older suite says so ("had", "then") and is left as measured.
func TestDocsQuoteTheSuite(t *testing.T) {
	pages, _ := filepath.Glob("../docs/*.md")
	n := len(Names())
	quoted := regexp.MustCompile(`(\d+) (contract )?checks`)
	seen := 0
	for _, p := range append(pages, "../README.md") {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(data), "\n") {
			for _, m := range quoted.FindAllStringSubmatch(l, -1) {
				if strings.Contains(l, " had ") || strings.Contains(l, " then") {
					continue
				}
				seen++
				if k, _ := strconv.Atoi(m[1]); k != n {
					t.Errorf("%s:%d quotes %q; the suite has %d checks (mu-plugin-contract list)", p, i+1, m[0], n)
				}
			}
		}
	}
	if seen == 0 {
		t.Errorf("no page quotes the number of checks: docs/contract.md should say it")
	}
}
