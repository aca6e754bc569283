package drive

import (
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/contract"
)

// Verdicts fails the test for every check of rep that failed, every skip
// that skipOK does not allow (the check applies to the plugin named
// name), and every check of mustPass that did not pass: how a test reads
// the contract suite's report.
func Verdicts(t testing.TB, rep *contract.Report, name string, skipOK func(check string) bool, mustPass ...string) {
	t.Helper()
	for _, r := range rep.Results {
		switch {
		case r.Status == contract.Fail:
			t.Errorf("FAIL %s: %s\n%s", r.Name, r.Reason, strings.Join(r.Wire, "\n"))
		case r.Status == contract.Skip && !skipOK(r.Name):
			t.Errorf("SKIP %s: %s (it applies to %s)", r.Name, r.Reason, name)
		}
	}
	for _, must := range mustPass {
		if r, ok := rep.Get(must); !ok || r.Status != contract.Pass {
			t.Errorf("%s did not pass: %+v", must, r)
		}
	}
}
