package execchan

import (
	"os/exec"
	"strings"
	"testing"
)

// TestScriptsMarkRunsWithRunVar: the scripts find and mark a run's
// processes by the variable the bridge sets (RunVar), written out in them.
func TestScriptsMarkRunsWithRunVar(t *testing.T) {
	for name, s := range map[string]string{"agent": AgentScript, "stop": StopScript} {
		if !strings.Contains(s, RunVar+"=") {
			t.Errorf("the %s script does not name %s", name, RunVar)
		}
	}
	if !strings.Contains(AgentScript, RunVar+"=$m exec") {
		t.Errorf("the agent script does not mark its runs with %s", RunVar)
	}
}

// TestScriptsParse: every script this backend sends parses under /bin/sh.
func TestScriptsParse(t *testing.T) {
	for name, s := range map[string]string{"agent": AgentScript, "stop": StopScript, "home": HomeScript} {
		if out, err := exec.Command("/bin/sh", "-n", "-c", s).CombinedOutput(); err != nil {
			t.Errorf("%s: %v: %s", name, err, out)
		}
	}
}
