// Package testimage gives tests the project's Docker test image,
// mu-plugins-test:r2, building it once per machine when it is missing
// (integration/image/build.sh: mmdebstrap → docker import → Dockerfile.test).
// No registry is needed. Docker being unreachable fails the test: it never
// skips.
package testimage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/tier"
)

// Name is the test image every Docker test uses, and BaseName the image it
// is built from (root, no user). Their tags name the revision of what they
// hold: a change to the image bumps it, so a machine's older image, which
// another checkout may still use, is left alone and the new one built
// beside it. r2: no image label (r1 labelled every container made from it
// org.mu-plugins.test=1).
const (
	Name     = "mu-plugins-test:r2"
	BaseName = "mu-plugins-base:bookworm-r2"
)

// Label marks the containers the project's tests create, so leftovers can
// be listed and removed: docker ps -aq -f label=org.mu-plugins.test=1. The
// tests pass it as a container label; the image carries none.
const Label = "org.mu-plugins.test"

var (
	once   sync.Once
	result error
)

// Ensure returns the test image's name, building it first when missing. A
// file lock under the system temp dir keeps parallel test binaries from
// building it twice. It fails tb when Docker is unreachable or the build
// fails.
func Ensure(tb testing.TB) string {
	tb.Helper()
	tier.Need(tb, "docker")
	once.Do(func() { result = ensure() })
	if result != nil {
		tb.Fatalf("testimage: %v", result)
	}
	return Name
}

func ensure() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		return fmt.Errorf("the Docker Engine is unreachable (these tests need it; is dockerd running and DOCKER_HOST right?): %v: %s", err, bytes.TrimSpace(out))
	}
	if exists(ctx) {
		return nil
	}
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "mu-plugins-testimage.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if exists(ctx) { // another binary built it while we waited
		return nil
	}
	script := filepath.Join(repoRoot(), "integration", "image", "build.sh")
	cmd := exec.CommandContext(ctx, "/bin/sh", script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s with %s: %v\n%s", Name, script, err, out.Bytes())
	}
	if !exists(ctx) {
		return fmt.Errorf("%s ran but %s is still missing:\n%s", script, Name, out.Bytes())
	}
	return nil
}

func exists(ctx context.Context) bool {
	return exec.CommandContext(ctx, "docker", "image", "inspect", Name).Run() == nil
}

// repoRoot is the module root, found from this source file's path.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Exec runs argv in the container Container through `docker exec -i`, the
// way the docker backend runs a host's commands (but over the CLI): a
// tmuxjob.Runner, for the test agent's installer and the job scripts.
type Exec struct{ Container string }

// Run runs argv with stdin; a non-zero exit is its code, not an error.
func (c Exec) Run(ctx context.Context, argv []string, stdin []byte) ([]byte, []byte, int, error) {
	cmd := exec.CommandContext(ctx, "docker", append([]string{"exec", "-i", c.Container}, argv...)...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.Bytes(), errb.Bytes(), ee.ExitCode(), nil
	}
	return out.Bytes(), errb.Bytes(), 0, err
}
