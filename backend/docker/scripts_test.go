package docker

import (
	"os/exec"
	"strings"
	"testing"
)

// TestScriptsMarkRunsWithRunVar: the scripts find and mark a run's
// processes by the variable the bridge sets (runVar), written out in them.
func TestScriptsMarkRunsWithRunVar(t *testing.T) {
	for name, s := range map[string]string{"agent": agentScript, "stop": stopScript} {
		if !strings.Contains(s, runVar+"=") {
			t.Errorf("the %s script does not name %s", name, runVar)
		}
	}
	if !strings.Contains(agentScript, runVar+"=$m exec") {
		t.Errorf("the agent script does not mark its runs with %s", runVar)
	}
}

// TestScriptsParse: every script this backend sends parses under /bin/sh.
func TestScriptsParse(t *testing.T) {
	for name, s := range map[string]string{"agent": agentScript, "stop": stopScript, "home": homeScript} {
		if out, err := exec.Command("/bin/sh", "-n", "-c", s).CombinedOutput(); err != nil {
			t.Errorf("%s: %v: %s", name, err, out)
		}
	}
}
