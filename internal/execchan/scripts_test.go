package execchan

import (
	"context"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
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
	for name, s := range map[string]string{"agent": AgentScript, "stop": StopScript, "home": HomeScript, "host": hostSh} {
		if out, err := exec.Command("/bin/sh", "-n", "-c", s).CombinedOutput(); err != nil {
			t.Errorf("%s: %v: %s", name, err, out)
		}
	}
}

// TestHostCommandArgs: host.sh gets the deadline and the idle time as
// arguments, in whole seconds rounded up (a host never ends before its
// terms say), 0 for a term not set; never spliced into the script.
func TestHostCommandArgs(t *testing.T) {
	dl := int64(1_700_000_000_001)
	for _, c := range []struct {
		dl   *int64
		idle time.Duration
		want []string
	}{
		{nil, 0, []string{"0", "0"}},
		{&dl, 1500 * time.Millisecond, []string{"1700000001", "2"}},
		{nil, 30 * time.Minute, []string{"0", "1800"}},
	} {
		argv := HostCommand(c.dl, c.idle)
		if len(argv) != 6 || argv[0] != "/bin/sh" || argv[1] != "-c" || argv[2] != hostSh || !reflect.DeepEqual(argv[4:], c.want) {
			t.Errorf("HostCommand(%v, %v): %q, want args %q", c.dl, c.idle, argv[3:], c.want)
		}
	}
}

// TestHostScriptEndsAtDeadline: host.sh, run here, exits 0 once its
// deadline has passed (a second from now), saying why on stderr. The
// bound is on the wait only: killed after two minutes, it fails.
func TestHostScriptEndsAtDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dl := time.Now().Add(time.Second).UnixMilli()
	argv := HostCommand(&dl, 0)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "deadline passed") {
		t.Errorf("host.sh with a deadline a second on: %v: %s", err, out)
	}
}
