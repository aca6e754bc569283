package tmuxjob_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/programs"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// followCmd is the test binary as a view: `tmuxjob-test-follow HANDLE`
// with followRootVar set follows the job through Jobs.Follow over a
// LocalRunner, as the docker plugin's view sub-command does over its exec.
const (
	followCmd     = "tmuxjob-test-follow"
	followRootVar = "MU_TMUXJOB_TEST_FOLLOW_ROOT"
)

func TestMain(m *testing.M) {
	programs.Main(m, map[string]func(){followCmd: func() {
		j, err := tmuxjob.New(tmuxjob.LocalRunner{}, tmuxjob.Options{Root: os.Getenv(followRootVar), Kind: "tmux", Channel: "tmux-test"})
		if err == nil {
			err = j.Follow(context.Background(), os.Args[1], os.Stdout)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "follow:", err)
			os.Exit(1)
		}
	}})
}

func followView(t *testing.T, root string) func(handle, logPath string) protocol.View {
	exe := programs.Command(t, followCmd)
	return func(handle, _ string) protocol.View {
		return tmuxjob.ViewArgv(map[string]string{followRootVar: root}, exe, handle)
	}
}

func TestFollowViewOverRunner(t *testing.T) {
	h := newHost(t, func(o *tmuxjob.Options) { o.View = followView(t, o.Root) })
	key := "fv"
	res := h.startAgent(t, key, nil, "")
	cmd, out := runView(t, res.View)
	waitfor.Eventually(t, "the view shows the agent", func() bool { return strings.Contains(out.String(), "mu test agent: ready") })
	big := strings.Repeat("0123456789abcdef", 40000) // 640 KB: more than one chunk
	h.send(t, key, "m1", "big "+big+" [[exit:3]]")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the view did not end cleanly when the job ended: %v\n%s", err, drive.Tail(out.String()))
	}
	s := out.String()
	if !strings.Contains(s, big) || !strings.Contains(s, "[mu: the job ended, exit 3]") {
		t.Fatalf("view output: %s", drive.Tail(s))
	}
	if st, _ := h.jobs.Status(waitfor.Context(t, 2*time.Minute), key); st.State != protocol.JobEnded || *st.Exit != 3 {
		t.Fatalf("status: %+v", st)
	}
}

// A job that writes the viewer's clipboard (OSC 52), sets its title and
// queries its terminal: the view shows its text without any of them.
func TestFollowViewDropsTerminalControls(t *testing.T) {
	h := newHost(t, func(o *tmuxjob.Options) { o.View = followView(t, o.Root) })
	ctx := waitfor.Context(t, 2*time.Minute)
	cmd := `printf 'before\033]52;c;b3duZWQ=\007\033]0;owned\033\\\033[6n\033[21t\033[31mafter\033[0m\n'`
	res, err := h.jobs.Start(ctx, protocol.JobStartParams{Base: base("tc"), Key: "tc", Spec: spec(cmd)})
	if err != nil {
		t.Fatal(err)
	}
	v, out := runView(t, res.View)
	if err := v.Wait(); err != nil {
		t.Fatalf("the view: %v\n%q", err, out.String())
	}
	s := out.String()
	if !strings.Contains(s, "before\x1b[31mafter\x1b[0m") || strings.Contains(s, "\x1b]") || strings.Contains(s, "\x1b[6n") || strings.Contains(s, "\x1b[21t") {
		t.Fatalf("view output: %q", s)
	}
}
