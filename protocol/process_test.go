package protocol_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// The test binary re-execs itself as a plugin when this variable is set
// (the hashicorp/go-plugin pattern): real process, real pipes, real group.
const childEnv = "MU_PROTOCOL_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// runChild is a plugin whose link.exec starts `sleep` in its own group (as
// a backend's run would) and then ignores its context entirely.
func runChild(mode string) int {
	err := protocol.Serve(context.Background(), protocol.Options{Name: "t", Version: "1.0", Instance: "i", Seams: testSeams(),
		Handlers: map[string]protocol.Handler{protocol.MethodLinkExec: func(ctx context.Context, c *protocol.Call) (any, error) {
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

// groupAlive reports whether any process is left in group pgid.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

// On stdin EOF with a call in flight the plugin exits within the spec's 5 s,
// even when its handler and its Stop hook both ignore every signal to stop.
// (The sleep it started is then mu's group kill's to reap; the well-behaved
// mode shows a backend that stops its run leaves the group empty.)
func TestEOFExitRealProcess(t *testing.T) {
	for _, mode := range []string{"stuck", "polite"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+mode, "GORACE=atexit_sleep_ms=0")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pgid := cmd.Process.Pid
			t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
			out := bufio.NewReader(stdout)
			io.WriteString(stdin, initLine+"\n")
			if l, err := out.ReadString('\n'); err != nil || !strings.Contains(l, `"result"`) {
				t.Fatalf("handshake: %q %v", l, err)
			}
			io.WriteString(stdin, `{"jsonrpc":"2.0","id":2,"method":"link.exec","params":{`+base+`}}`+"\n")
			// Wait until the run exists in the group (ps, not a sleep).
			for i := 0; i < 500 && !hasChild(pgid); i++ {
				time.Sleep(10 * time.Millisecond)
			}
			stdin.Close()
			exitsWithin(t, cmd, protocol.Grace, "the plugin did not exit within 5 s of stdin EOF")
			if mode == "polite" {
				for i := 0; i < 100 && groupAlive(pgid); i++ {
					time.Sleep(20 * time.Millisecond)
				}
				if groupAlive(pgid) {
					t.Fatal("the group is not empty after a polite plugin exited")
				}
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
func TestEOFExitWithStdoutUnread(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=flood", "GORACE=atexit_sleep_ms=0")
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
