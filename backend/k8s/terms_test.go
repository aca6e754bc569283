package k8s_test

import (
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
)

// A pod's ttl (its activeDeadlineSeconds; 20 s, more than a pod takes
// to start here) ends it with no mu running:
// host.status reads gone, and release resolves.
func TestTTLEndsHost(t *testing.T) {
	sandboxtest.EndsAtDeadline(t, start(t).Plugin, "ttl-key", 20*time.Second, map[string]string{"cpuRequest": "10m", "memoryRequest": "32Mi"})
}

// The idleReclaimMs an idle gives is carried out: the pod stays up while
// runs come within the idle time and while a run lasts longer than it,
// then ends itself (its container exits 0) once idle.
func TestIdleEndsHost(t *testing.T) {
	sandboxtest.IdleEndsOnlyWhenIdle(t, start(t).Plugin, "idle-key", 10*time.Second, map[string]string{"cpuRequest": "10m", "memoryRequest": "32Mi"})
}
