package protocol_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/programs"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The test binary runs as mu-plugin-t (programs.Main), a plugin whose
// mode childEnv names: real process, real pipes, real group.
const childEnv = "MU_PROTOCOL_TEST_CHILD"

func TestMain(m *testing.M) {
	programs.Main(m, map[string]func(){"mu-plugin-t": func() { os.Exit(runChild(os.Getenv(childEnv))) }})
}

// child is the plugin in mode as the caller starts it (atexit_sleep_ms: a
// -race child otherwise sleeps 1 s at exit).
func child(t *testing.T, mode string) caller.Config {
	return caller.Config{Name: "t", Argv: []string{programs.Command(t, "mu-plugin-t")},
		Env: []string{childEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}}
}

// runChild is a plugin whose link.exec starts `sleep` in its own group (as
// a backend's run would) and then ignores its context entirely.
func runChild(mode string) int {
	err := protocol.Serve(context.Background(), protocol.Options{Name: "t", Version: "1.0", Instance: "i", Seams: testSeams(),
		Handlers: map[string]protocol.Handler{protocol.MethodLinkExec.Name: func(ctx context.Context, c *protocol.Call) (any, error) {
			if mode == "flood" { // a reply far larger than a pipe holds
				return protocol.ExecResult{ExitCode: new(int), Stdout: strings.Repeat("x", 900<<10)}, nil
			}
			cmd := exec.Command("sleep", "300")
			if err := cmd.Start(); err != nil {
				return nil, err
			}
			if mode == "stuck" {
				select {}
			}
			<-ctx.Done()
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, ctx.Err()
		}},
		Stop: func(context.Context) {
			if mode == "stuck" {
				select {} // a Stop hook that never returns either
			}
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// On stdin EOF with a call in flight the plugin exits within the spec's 5 s,
// even when its handler and its Stop hook both ignore every signal to stop.
// (The sleep it started is then mu's group kill's to reap; the well-behaved
// mode shows a backend that stops its run leaves the group empty.)
func TestEOFExitRealProcess(t *testing.T) {
	for _, mode := range []string{"stuck", "polite"} {
		t.Run(mode, func(t *testing.T) {
			r := drive.StartRaw(t, child(t, mode))
			r.Send(initLine)
			if l := r.Recv(); !strings.Contains(l, `"result"`) {
				t.Fatalf("handshake: %q", l)
			}
			r.Send(`{"jsonrpc":"2.0","id":2,"method":"link.exec","params":{` + base + `}}`)
			waitfor.Eventually(t, "the run in the plugin's group", func() bool { return hasChild(r.Pgid()) })
			// stdin EOF alone; the group is killed if the plugin is not gone
			// within the grace (5 s).
			rep := r.CloseStdin()
			if rep.LeaderKilled() {
				t.Fatalf("the plugin did not exit within 5 s of stdin EOF: %+v", rep)
			}
			if mode == "polite" && !rep.Graceful {
				t.Fatalf("the group is not empty after a polite plugin exited: %+v", rep)
			}
		})
	}
}

func hasChild(pgid int) bool {
	out, _ := exec.Command("pgrep", "-g", fmt.Sprint(pgid), "sleep").Output()
	return len(strings.TrimSpace(string(out))) > 0
}

// After stdin EOF the plugin exits within 5 s even when nobody reads its
// stdout: a reply blocked on a full pipe holds neither jrpc2 nor the exit.
// (The caller always reads a plugin's stdout: this test drives the plugin
// as a caller that does not would, by hand.)
func TestEOFExitWithStdoutUnread(t *testing.T) {
	cfg := child(t, "flood")
	cmd := exec.Command(cfg.Argv[0])
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, _ := cmd.StdinPipe()
	outR, outW, err := os.Pipe() // its read end stays open and is never read
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	cmd.Stdout = outW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	io.WriteString(stdin, initLine+"\n")
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":2,"method":"link.exec","params":{`+base+`}}`+"\n")
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":3,"method":"link.exec","params":{`+base+`}}`+"\n")
	stdin.Close()
	exitsWithin(t, cmd, protocol.Grace, "with its stdout unread, the plugin did not exit within 5 s of stdin EOF")
}

// exitsWithin fails the test with msg unless cmd exits within d (the spec's
// bound on a plugin's exit, not a measurement).
func exitsWithin(t *testing.T, cmd *exec.Cmd, d time.Duration, msg string) {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(d):
		t.Fatal(msg)
	}
}
