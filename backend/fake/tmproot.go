package fake

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// tempRoot makes the temporary root of a fake run without --root or
// --state, named after its process (mu-plugin-fake-PID-RANDOM), after
// removing those of fake processes that are gone: Stop removes a run's
// own, but a process killed (mu's SIGKILL after its exit budget) runs no
// clean-up, and /tmp would fill with them.
func tempRoot() (string, error) {
	sweepTempRoots(os.TempDir())
	return os.MkdirTemp("", fmt.Sprintf("mu-plugin-fake-%d-", os.Getpid()))
}

// sweepTempRoots removes the temp roots in dir that this user owns and
// whose process no longer exists.
func sweepTempRoots(dir string) {
	ms, _ := filepath.Glob(filepath.Join(dir, "mu-plugin-fake-*-*"))
	for _, m := range ms {
		parts := strings.Split(filepath.Base(m), "-")
		if len(parts) != 5 {
			continue
		}
		pid, err := strconv.Atoi(parts[3])
		if err != nil || pid <= 0 {
			continue
		}
		fi, err := os.Lstat(m)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
			continue
		}
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			_ = os.RemoveAll(m)
		}
	}
}
