package docker_test

import (
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
)

// The deadlineAt a ttl (3 s) gives is carried out with no mu running: the
// container ends itself after it, host.status reads gone (the container
// is removed) and release resolves.
func TestTTLEndsHost(t *testing.T) {
	sandboxtest.EndsAtDeadline(t, start(t).Plugin, "ttl-key", 3*time.Second, nil)
}

// The idleReclaimMs an idle gives is carried out: the host stays up while
// runs come within the idle time and while a run lasts longer than it,
// then ends itself once idle.
func TestIdleEndsHost(t *testing.T) {
	sandboxtest.IdleEndsOnlyWhenIdle(t, start(t).Plugin, "idle-key", 4*time.Second, nil)
}
