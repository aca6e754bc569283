package main

import (
	"strings"
	"testing"
	"time"
)

// A stream as go test -json writes it: a hermetic package that passed with
// one test in the docker tier, a package wholly in the ssh tier that
// failed, and one whose tier was not asked.
const stream = `{"Time":"2026-01-01T00:00:00Z","Action":"start","Package":"m/a"}
{"Time":"2026-01-01T00:00:00Z","Action":"run","Package":"m/a","Test":"TestX"}
{"Time":"2026-01-01T00:00:00Z","Action":"output","Package":"m/a","Test":"TestX","Output":"x passed quietly\n"}
{"Time":"2026-01-01T00:00:02Z","Action":"pass","Package":"m/a","Test":"TestX","Elapsed":2}
{"Time":"2026-01-01T00:00:02Z","Action":"run","Package":"m/a","Test":"TestD"}
{"Time":"2026-01-01T00:00:02Z","Action":"output","Package":"m/a","Test":"TestD/sub","Output":"    d_test.go:9: mu-test-tier: docker\n"}
{"Time":"2026-01-01T00:00:07Z","Action":"pass","Package":"m/a","Test":"TestD","Elapsed":5}
{"Time":"2026-01-01T00:00:07Z","Action":"output","Package":"m/a","Output":"PASS\n"}
{"Time":"2026-01-01T00:00:07Z","Action":"output","Package":"m/a","Output":"ok  \tm/a\t7.0s\n"}
{"Time":"2026-01-01T00:00:07Z","Action":"pass","Package":"m/a","Elapsed":7.5}
{"Time":"2026-01-01T00:00:00Z","Action":"output","Package":"m/s","Output":"mu-test-tier: ssh\n"}
{"Time":"2026-01-01T00:00:00Z","Action":"run","Package":"m/s","Test":"TestOK"}
{"Time":"2026-01-01T00:00:00Z","Action":"output","Package":"m/s","Test":"TestOK","Output":"ok test's log\n"}
{"Time":"2026-01-01T00:00:01Z","Action":"pass","Package":"m/s","Test":"TestOK","Elapsed":1}
{"Time":"2026-01-01T00:00:01Z","Action":"run","Package":"m/s","Test":"TestBad"}
{"Time":"2026-01-01T00:00:01Z","Action":"output","Package":"m/s","Test":"TestBad","Output":"    s_test.go:3: the reason it failed\n"}
{"Time":"2026-01-01T00:00:04Z","Action":"fail","Package":"m/s","Test":"TestBad","Elapsed":3}
{"Time":"2026-01-01T00:00:04Z","Action":"output","Package":"m/s","Output":"FAIL\tm/s\t4.0s\n"}
{"Time":"2026-01-01T00:00:04Z","Action":"fail","Package":"m/s","Elapsed":4}
{"Time":"2026-01-01T00:00:04Z","Action":"output","Package":"m/k","Output":"SKIP tier k8s not asked: it needs a cluster\n"}
{"Time":"2026-01-01T00:00:04Z","Action":"output","Package":"m/k","Output":"ok  \tm/k\t0.01s [no tests to run]\n"}
{"Time":"2026-01-01T00:00:04Z","Action":"pass","Package":"m/k","Elapsed":0.01}
FAIL
`

func TestPassesThroughAndTimes(t *testing.T) {
	var out strings.Builder
	pkgs, order, first, last := read(strings.NewReader(stream), &out)
	got := out.String()
	for _, want := range []string{"ok  \tm/a\t7.0s\n", "the reason it failed\n", "FAIL\tm/s\t4.0s\n", "SKIP tier k8s not asked", "ok  \tm/k\t0.01s [no tests to run]\n", "\nFAIL\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the stream lacks %q:\n%s", want, got)
		}
	}
	for _, quiet := range []string{"x passed quietly", "ok test's log", "mu-test-tier", "PASS\n"} {
		if strings.Contains(got, quiet) {
			t.Errorf("the stream shows %q, which go test without -v hides:\n%s", quiet, got)
		}
	}
	if last.Sub(first) != 7*time.Second || strings.Join(order, " ") != "m/a m/s m/k" {
		t.Errorf("wall %s, order %v", last.Sub(first), order)
	}
	var tab strings.Builder
	printTables(&tab, pkgs, order, last.Sub(first))
	table := tab.String()
	for _, want := range []string{
		"m/a  hermetic  7.5  2  0  0",
		"m/s  ssh  4.0  1  1  0",
		"m/k  k8s (not asked)  0.0  0  0  0",
		"hermetic  1  2.5", // m/a less TestD
		"docker  0  5.0",
		"ssh  1  4.0",
		"go test: 7.0 s of wall clock",
	} {
		if !strings.Contains(strings.Join(strings.Fields(table), "  "), strings.Join(strings.Fields(want), "  ")) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
}
