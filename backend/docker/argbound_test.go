package docker_test

import (
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
)

// A spec.cmd one byte over what one exec argument takes in the container
// (128 KiB with its NUL) is refused up front with nothing left; one at it
// starts and runs (sandboxtest.CmdArgBound).
func TestJobStartCmdArgBound(t *testing.T) {
	ctx := waitfor.Context(t, 5*time.Minute)
	p, host := spawnPlugin(t, ctx)
	sandboxtest.CmdArgBound(t, ctx, p, host, jobSpec("bound", ".", nil), "docker")
}
