package ssh

import (
	"os/exec"
	"strings"
	"testing"
)

// TestScriptsParse: the wrapper (both forms), the stop and the probe parse
// under each shell the stop tests run them on.
func TestScriptsParse(t *testing.T) {
	scripts := map[string]string{
		"wrapper (stdin)": wrapperArm + "\n(\n:\n) </dev/null\n" + wrapperDisarm,
		"wrapper (argv)":  wrapperBody,
		"kill":            killCommand(12345),
		"probe":           probeScript,
	}
	for _, sh := range [][]string{{"/bin/sh"}, {"/bin/bash"}, {"busybox", "sh"}} {
		for name, s := range scripts {
			out, err := exec.Command(sh[0], append(sh[1:], "-n", "-c", s)...).CombinedOutput()
			if err != nil {
				t.Errorf("%s under %v: %v: %s", name, sh, err, out)
			}
		}
	}
}

// TestOneLine: the pieces that travel in a command line are one line, and a
// script that is not panics at start rather than reach a login shell.
func TestOneLine(t *testing.T) {
	for _, s := range []string{wrapperArm, wrapperDisarm, wrapperBody, killScript} {
		if strings.Contains(s, "\n") {
			t.Errorf("not one line: %q", s)
		}
	}
	if got := oneLine("x.sh", "# a comment\na; \\\nb\n"); got != "a; b" {
		t.Errorf("oneLine = %q, want %q", got, "a; b")
	}
	defer func() {
		if recover() == nil {
			t.Error("a script of two lines did not panic")
		}
	}()
	oneLine("x.sh", "a\nb\n")
}
