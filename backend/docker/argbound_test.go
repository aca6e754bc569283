package docker_test

import (
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
)

// A spec.cmd one byte over what one exec argument takes in the container
// (128 KiB with its NUL) is refused up front with nothing left; one at it
// starts and runs (sandboxtest.CmdArgBound).
func TestJobStartCmdArgBound(t *testing.T) {
	ctx := testutil.Context(t, 5*time.Minute)
	p, host := spawnPlugin(t, ctx)
	sandboxtest.CmdArgBound(t, ctx, p, host, jobSpec("bound", ".", nil), "docker")
}
