package contract

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/programs"
)

func TestMain(m *testing.M) {
	programs.Main(m, map[string]func(){"mu-plugin-testp": func() { os.Exit(runTestPlugin(os.Getenv(testPluginVar))) }})
}

// fakeBin is mu-plugin-fake, built once for every test.
func fakeBin(t testing.TB) string {
	return programs.Build(t, "github.com/mu-org/mu-plugins/cmd/mu-plugin-fake")
}

// run runs the suite and logs its report.
func run(t *testing.T, opts Options) *Report {
	t.Helper()
	var out strings.Builder
	opts.Out = &out
	rep, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", out.String())
	return rep
}

// passesAll fails the test for every check that failed, or skipped
// without saying why.
func passesAll(t *testing.T, rep *Report) {
	t.Helper()
	for _, r := range rep.Results {
		switch {
		case r.Status == Fail:
			t.Errorf("FAIL %s: %s", r.Name, r.Reason)
		case r.Status == Skip && r.Reason == "":
			t.Errorf("SKIP %s says no why", r.Name)
		}
	}
}

func status(t *testing.T, rep *Report, name string) Result {
	t.Helper()
	r, ok := rep.Get(name)
	if !ok {
		t.Fatalf("no result for %s", name)
	}
	return r
}

// wantResult fails the test unless rep's result for name is st, with a
// reason that holds has ("" holds in any).
func wantResult(t *testing.T, rep *Report, name string, st Status, has string) {
	t.Helper()
	if r := status(t, rep, name); r.Status != st || !strings.Contains(r.Reason, has) {
		t.Errorf("%s %s (%s), want %s with a reason holding %q", name, r.Status, r.Reason, st, has)
	}
}

// TestCleanFake: against the fake with no fault every check passes, or
// skips saying why; so with its job kind's firstTurn at-start.
func TestCleanFake(t *testing.T) {
	t.Parallel() // its own fakes: waits beside the others
	for _, args := range [][]string{nil, {"--first-turn", "at-start"}} {
		t.Run(strings.Join(append([]string{"fake"}, args...), " "), func(t *testing.T) {
			t.Parallel()
			rep := run(t, Options{Argv: append([]string{fakeBin(t)}, args...)})
			if len(rep.Results) != len(Names()) {
				t.Fatalf("%d results for %d checks", len(rep.Results), len(Names()))
			}
			passesAll(t, rep)
			t.Logf("the suite against the clean fake: %s in %s%s", rep.Summary(), rep.Elapsed.Round(time.Millisecond), rep.Slowest())
		})
	}
}
