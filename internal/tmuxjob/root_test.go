package tmuxjob_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// A jobs root another user could write, or whose jobs/ folder another user
// owns, is refused with a remedy (human), as the fake's --state is: that
// user could swap a job's folder and forge its state. A root of the user's
// own, or one not made yet, is taken.
func TestRootOthersCanWriteIsRefused(t *testing.T) {
	ctx := waitfor.Context(t, time.Minute)
	mk := func(mode os.FileMode, jobsOwner int) string {
		dir := filepath.Join(t.TempDir(), "root")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		if jobsOwner >= 0 {
			if err := os.Mkdir(filepath.Join(dir, "jobs"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(filepath.Join(dir, "jobs"), jobsOwner, jobsOwner); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	me := os.Getuid()
	for name, c := range map[string]struct {
		dir  string
		safe bool
	}{
		"0777":             {mk(0o777, -1), false},
		"group-writable":   {mk(0o770, -1), false},
		"jobs-of-another":  {mk(0o700, 65534), false},
		"own-0700":         {mk(0o700, me), true},
		"own-0755-no-jobs": {mk(0o755, -1), true},
		"not-made-yet":     {filepath.Join(t.TempDir(), "later"), true},
	} {
		var roots tmuxjob.Roots
		root, err := roots.Get(ctx, name, tmuxjob.LocalRunner{}, c.dir, "host "+name)
		var pe *protocol.Error
		switch {
		case c.safe && (err != nil || root != c.dir):
			t.Errorf("%s: %q %v, want it taken", name, root, err)
		case !c.safe && (!errors.As(err, &pe) || pe.Kind != protocol.Human || pe.Remedy == "" || !strings.Contains(pe.Message, c.dir)):
			t.Errorf("%s: %q %v, want a human error naming %s with a remedy", name, root, err, c.dir)
		}
	}
}
