package contract

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/backend/fake"
	"github.com/mu-org/mu-plugins/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.Main(m, map[string]func(){"mu-plugin-testp": func() { os.Exit(runTestPlugin(os.Getenv(testPluginVar))) }})
}

// fakeBin is mu-plugin-fake, built once for every test.
func fakeBin(t testing.TB) string {
	return testutil.Build(t, "github.com/mu-org/mu-plugins/cmd/mu-plugin-fake")
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
			t.Logf("the suite against the clean fake: %s in %s%s", rep.Summary(), rep.Elapsed.Round(time.Millisecond), slowest(rep))
		})
	}
}

// faultCases: for each fault the fake can inject, a scenario, the check
// meant to catch it, and (for faults that slow every check) a selection.
var faultCases = []struct {
	fault, scenario, check, run string
}{
	{fake.FaultDelay, `{"method":"channel.baseline","fault":"delay","ms":12000}`, "channel/baseline", ""},
	{fake.FaultError, `{"method":"host.release","fault":"error","kind":"human","message":"injected","remedy":"ask a person"}`, "host/release", ""},
	{fake.FaultHang, `{"method":"link.exec","call":1,"fault":"hang"}`, "process/cancel", `^(process|wire|registration)/`},
	{fake.FaultCrashBefore, `{"method":"host.acquire","fault":"crash-before"}`, "host/acquire", ""},
	{fake.FaultCrashAfter, `{"method":"job.start","fault":"crash-after"}`, "job/start", ""},
	{fake.FaultReply, `{"method":"channel.receipt","fault":"reply","result":{"state":"accepted","id":"not-the-asked-one"}}`, "channel/receipt", ""},
	{fake.FaultNotJSON, `{"method":"link.checkSteps","fault":"not-json"}`, "wire/json", ""},
	{fake.FaultUnknownField, `{"method":"link.checkSteps","fault":"unknown-field"}`, "wire/envelope", ""},
	{fake.FaultOrphanReply, `{"method":"link.checkSteps","fault":"orphan-reply"}`, "wire/pending-id", ""},
	{fake.FaultRequestToMu, `{"method":"link.checkSteps","fault":"request-to-mu"}`, "wire/no-request", ""},
	{fake.FaultBadNotify, `{"method":"link.checkSteps","fault":"bad-notification"}`, "wire/notifications", ""},
	{fake.FaultDoubleNotify, `{"method":"channel.watch","fault":"double-notification"}`, "channel/watch", ""},
	{fake.FaultEarlyNotify, `{"method":"channel.watch","fault":"early-notification"}`, "channel/watch", ""},
	{fake.FaultLongLine, `{"method":"link.checkSteps","fault":"long-line"}`, "wire/line-length", ""},
	{fake.FaultInvalidUTF8, `{"method":"link.checkSteps","fault":"invalid-utf8"}`, "wire/utf8", ""},
	{fake.FaultEscapeGroup, `{"method":"host.status","fault":"escape-group"}`, "process/group", ""},
	{fake.FaultCanary, `{"method":"host.status","fault":"canary-stderr"}`, "secrets/canary", ""},
	{fake.FaultIgnoreEOF, `{"fault":"ignore-eof"}`, "process/eof-exit", `^(process|registration)/`},
	{fake.FaultEarlyTimeout, `{"method":"link.exec","fault":"early-timeout"}`, "link/exec-timeout", `^(link|registration)/`},
	{fake.FaultSetsidRuns, `{"method":"link.exec","fault":"setsid-runs"},{"method":"link.fetch","fault":"setsid-runs"},{"method":"link.push","fault":"setsid-runs"}`, "process/group", `^(link|process|registration)/`},
	{fake.FaultUnfencedReceipt, `{"method":"channel.receipt","fault":"unfenced-receipt"}`, "channel/receipt-final", `^(channel|registration)/`},
	{fake.FaultNewestTurn, `{"method":"channel.lastRun","fault":"newest-turn"},{"method":"channel.watch","fault":"newest-turn"}`, "channel/after-runs", `^(channel|registration)/`},
	{fake.FaultEarlierTurn, `{"method":"channel.lastRun","fault":"earlier-turn"},{"method":"channel.watch","fault":"earlier-turn"}`, "channel/after-runs", `^(channel|registration)/`},
}

// TestFaultsCaught: the suite is able to fail. Each fault the fake injects
// fails the check meant to catch it, by name, and every other selected
// check still ran to a result.
func TestFaultsCaught(t *testing.T) {
	testutil.Tier(t, "slow") // 23 runs of the suite: minutes
	t.Parallel()             // its own fakes: waits beside the others
	for _, name := range fake.FaultNames {
		if !slices.ContainsFunc(faultCases, func(c struct{ fault, scenario, check, run string }) bool { return c.fault == name }) {
			t.Errorf("fault %s has no case: the suite is not shown to catch it", name)
		}
	}
	// The cases mostly wait (a delay, a hang, a stop grace): run four at
	// once, then judge each.
	bin := fakeBin(t)
	reports := make([]*Report, len(faultCases))
	logs := make([]string, len(faultCases))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, c := range faultCases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			dir, err := os.MkdirTemp("", "scenario-")
			if err != nil {
				logs[i] = err.Error()
				return
			}
			defer os.RemoveAll(dir)
			sc := filepath.Join(dir, "scenario.json")
			if err := os.WriteFile(sc, []byte(`{"faults":[`+c.scenario+`]}`), 0o600); err != nil {
				logs[i] = err.Error()
				return
			}
			var out strings.Builder
			reports[i], err = Run(context.Background(), Options{Argv: []string{bin, "--scenario", sc}, Run: c.run, Out: &out})
			logs[i] = out.String()
			if err != nil {
				logs[i] += err.Error()
			}
		}()
	}
	wg.Wait()
	for i, c := range faultCases {
		t.Run(c.fault, func(t *testing.T) {
			rep := reports[i]
			t.Logf("report:\n%s", logs[i])
			if rep == nil {
				t.Fatal("the suite did not run")
			}
			if r := status(t, rep, c.check); r.Status != Fail {
				t.Errorf("%s: %s %s, want FAIL", c.fault, r.Status, c.check)
			}
			want := 0
			for _, n := range Names() {
				if c.run == "" || matches(c.run, n) {
					want++
				}
			}
			if len(rep.Results) != want {
				t.Errorf("%d checks reported, want %d: the suite stopped early", len(rep.Results), want)
			}
			// The others ran: the registration checks, which need no
			// process, still pass.
			if r := status(t, rep, "registration/basename"); r.Status != Pass {
				t.Errorf("registration/basename %s: %s", r.Status, r.Reason)
			}
			t.Logf("%s: %s in %s%s", c.fault, rep.Summary(), rep.Elapsed.Round(time.Millisecond), slowest(rep))
		})
	}
}

func matches(re, s string) bool {
	ok, _ := regexp.MatchString(re, s)
	return ok
}

// slowest names the checks that took over 3 s.
func slowest(rep *Report) string {
	var out []string
	for _, r := range rep.Results {
		if r.Elapsed > 3*time.Second {
			out = append(out, fmt.Sprintf("%s %s", r.Name, r.Elapsed.Round(100*time.Millisecond)))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (slow: " + strings.Join(out, ", ") + ")"
}
