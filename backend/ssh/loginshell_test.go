package ssh

import (
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
)

// noisyBashrc prints on stdout and stderr in every shell bash starts for
// sshd, as some users' ~/.bashrc does.
const noisyBashrc = "echo 'welcome to the box'\necho 'motd: be nice' >&2\n"

// Jobs on hosts whose login shell is not a POSIX one (fish, tcsh), or whose
// ~/.bashrc prints: every job script runs under sh with its arguments
// byte for byte (backslashes, quotes, newlines), a job round trip works,
// and link.exec's stderr never carries the wrapper's internal marker.
func TestJobsWhateverTheLoginShell(t *testing.T) {
	for _, c := range []struct{ name, shell, rc string }{
		{"fish", "/usr/bin/fish", ""},
		{"tcsh", "/usr/bin/tcsh", ""},
		{"noisy-bashrc", "/bin/bash", noisyBashrc},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newJobHost(t, testsshd.Options{LoginShell: c.shell, Bashrc: c.rc})
			ctx := waitfor.Context(t, 2*time.Minute)
			b := New(Config{SSHConfig: h.s.Config}, nil)
			defer b.Close()
			args := []string{`a\\b`, `trailing\`, "it's\n\"two\" lines", `$(no) !x`}
			out, _, code, err := b.Runner(h.s.Alias).Run(ctx, append([]string{"/bin/sh", "-c", `printf '[%s]' "$@"`, "sh"}, args...), nil)
			if want := "[" + strings.Join(args, "][") + "]"; err != nil || code != 0 || string(out) != want {
				t.Fatalf("a run's arguments: %q (exit %d, %v), want %q", out, code, err, want)
			}
			p := h.start(t)
			r, err := p.Exec(ctx, h.host(), "echo out; echo err >&2", ".", time.Minute)
			if err != nil || r.ExitCode == nil || *r.ExitCode != 0 || strings.Contains(r.Stderr, "mu-ssh-pg") || !strings.HasSuffix(r.Stdout, "out\n") {
				t.Fatalf("link.exec: %+v %v", r, err)
			}
			jobRoundTrip(t, h)
		})
	}
}
