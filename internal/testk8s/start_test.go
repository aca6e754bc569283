package testk8s

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// k8s_start (integration/k8s/lib.sh) returns only once the daemon runs its
// own command: up.sh checks a daemon with k8s_ours right after starting it
// (the kubelet), and a child that had not exec'd yet still showed the
// script's command line, read as "exited": CI went red on it. Fifty starts
// in a row, each checked at once; before the fix about one in ten failed.
func TestStartReturnsOnceTheDaemonRuns(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	lib := filepath.Join(filepath.Dir(file), "..", "..", "integration", "k8s", "lib.sh")
	state := filepath.Join(t.TempDir(), "st")
	script := `set -euo pipefail
. "$1"
K8S_STATE=$2 K8S_LOGS=$2/logs
mkdir -p "$K8S_STATE/pids" "$K8S_STATE/cmds" "$K8S_LOGS"
bad=0
for i in $(seq 50); do
	k8s_start "d$i" bash -c 'sleep 30; :' "$K8S_STATE/d$i"
	k8s_ours "$(cat "$K8S_STATE/pids/d$i")" || bad=$((bad + 1))
done
for i in $(seq 50); do kill "$(cat "$K8S_STATE/pids/d$i")" 2>/dev/null || true; done
echo "not yet the daemon's: $bad"
`
	out, err := exec.Command("bash", "-c", script, "bash", lib, state).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "not yet the daemon's: 0" {
		t.Errorf("right after k8s_start, the daemon was not yet the instance's: %s of 50 starts", got)
	}
}
