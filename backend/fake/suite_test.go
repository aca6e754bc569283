package fake_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/backend/fake"
	"github.com/mu-org/mu-plugins/contract"
	"github.com/mu-org/mu-plugins/internal/testutil/programs"
	"github.com/mu-org/mu-plugins/internal/testutil/tier"
)

func TestMain(m *testing.M) { programs.Main(m, nil) }

// The contract suite is able to fail: this package's faults, each caught
// by the check meant for it (here, beside the faults, so that the suite's
// own package never imports a plugin).

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
	tier.Need(t, "slow") // 23 runs of the suite: minutes
	for _, name := range fake.FaultNames {
		if !slices.ContainsFunc(faultCases, func(c struct{ fault, scenario, check, run string }) bool { return c.fault == name }) {
			t.Errorf("fault %s has no case: the suite is not shown to catch it", name)
		}
	}
	// The cases mostly wait (a delay, a hang, a stop grace): run four at
	// once, then judge each.
	bin := programs.Build(t, "github.com/mu-org/mu-plugins/cmd/mu-plugin-fake")
	reports := make([]*contract.Report, len(faultCases))
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
			reports[i], err = contract.Run(context.Background(), contract.Options{Argv: []string{bin, "--scenario", sc}, Run: c.run, Out: &out})
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
			if r, ok := rep.Get(c.check); !ok || r.Status != contract.Fail {
				t.Errorf("%s: %s %s, want FAIL", c.fault, r.Status, c.check)
			}
			want := 0
			for _, n := range contract.Names() {
				if c.run == "" || matches(c.run, n) {
					want++
				}
			}
			if len(rep.Results) != want {
				t.Errorf("%d checks reported, want %d: the suite stopped early", len(rep.Results), want)
			}
			// The others ran: the registration checks, which need no
			// process, still pass.
			if r, ok := rep.Get("registration/basename"); !ok || r.Status != contract.Pass {
				t.Errorf("registration/basename %s: %s", r.Status, r.Reason)
			}
			t.Logf("%s: %s in %s%s", c.fault, rep.Summary(), rep.Elapsed.Round(time.Millisecond), rep.Slowest())
		})
	}
}

func matches(re, s string) bool {
	ok, _ := regexp.MatchString(re, s)
	return ok
}
