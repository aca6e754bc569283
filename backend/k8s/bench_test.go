package k8s_test

import (
	"fmt"
	"os/exec"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/protocol"
)

// Run side by side: go test ./backend/k8s -run '^$' -bench . -benchtime 10x
// (with the test cluster up: MU_K8S_NAME). The peer is kubectl.

// kubectl runs kubectl against the plugin's cluster, context and namespace.
func kubectl(b *testing.B, p *plugin, args ...string) {
	b.Helper()
	argv := append([]string{"--kubeconfig", p.c.Kubeconfig, "--context", p.c.Context, "-n", p.c.Namespace}, args...)
	if out, err := exec.Command("kubectl", argv...).CombinedOutput(); err != nil {
		b.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
}

// BenchmarkAcquire compares host.acquire (create, ready, a readiness exec
// over a new exec channel) with `kubectl run` + `kubectl wait
// --for=condition=Ready` + one `kubectl exec POD -- true`. Deletion is
// outside the timer in both.
func BenchmarkAcquire(b *testing.B) {
	p := start(b)
	sandboxtest.BenchAcquire(b, p.Plugin)
	b.Run("kubectl", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			name := fmt.Sprintf("%s-kc-%d", p.prefix, i)
			kubectl(b, p, "run", name, "--image", p.c.Image, "--image-pull-policy", "IfNotPresent", "--restart", "Never",
				"--labels", "org.mu-plugins.test=1,org.mu-plugins.testrun="+runID,
				"--overrides", `{"spec":{"securityContext":{"runAsUser":1000},"automountServiceAccountToken":false}}`,
				"--command", "--", "/bin/sh", "-c", "trap 'exit 0' TERM; sleep infinity & wait")
			kubectl(b, p, "wait", "--for=condition=Ready", "pod/"+name, "--timeout=120s")
			kubectl(b, p, "exec", name, "--", "true")
			b.StopTimer()
			kubectl(b, p, "delete", "pod", name, "--grace-period=2", "--wait=true")
			b.StartTimer()
		}
	})
}

// BenchmarkExecTrue compares link.exec of `true` (over the plugin's pooled
// exec channel) with `kubectl exec POD -- true`, on one pod.
func BenchmarkExecTrue(b *testing.B) {
	p := start(b)
	h := p.Acquire(b, "bench-exec", nil).Handle
	sandboxtest.BenchExecTrue(b, p.Plugin, h, "kubectl", func(b *testing.B) { kubectl(b, p, "exec", h, "--", "true") })
	b.StopTimer()
	sandboxtest.Must(b, p, protocol.MethodHostRelease, sandboxtest.KeyParams("bench-exec"))
}
