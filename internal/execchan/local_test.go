package execchan

import (
	"context"
	"io"
	"os/exec"
	"testing"
	"time"
)

// procConn is a channel's transport over a local /bin/sh running
// AgentScript: the loop runs on this machine as it runs in a container.
type procConn struct {
	in  io.WriteCloser
	cmd *exec.Cmd
}

func (c procConn) Write(p []byte) (int, error) { return c.in.Write(p) }
func (c procConn) Close() error                { return c.in.Close() }

// localPool is a pool of one channel whose host is this machine.
func localPool(t *testing.T) *Pool {
	t.Helper()
	var cmds []*exec.Cmd
	p := NewPool(Backend{
		Open: func(ctx context.Context) (*Session, error) {
			cmd := exec.Command("/bin/sh", "-c", AgentScript)
			in, err := cmd.StdinPipe()
			if err != nil {
				return nil, err
			}
			s := NewSession(procConn{in, cmd})
			out, err := cmd.StdoutPipe()
			if err != nil {
				return nil, err
			}
			cmd.Stderr = s.Stderr()
			if err := cmd.Start(); err != nil {
				return nil, err
			}
			cmds = append(cmds, cmd)
			go func() { _, err := io.Copy(s.Stdout(), out); s.End(err) }()
			return s, nil
		},
		Stop: func(ctx context.Context, mark string) error {
			return exec.CommandContext(ctx, "/bin/sh", "-c", StopScript, "sh", mark).Run()
		},
		OpenErr: func(err error) error { return err },
	}, 1)
	t.Cleanup(func() {
		p.Close()
		for _, c := range cmds {
			_ = c.Wait()
		}
	})
	return p
}

// TestRunAfterLeftoverKill: a run whose leftovers the loop killed (its
// kill.sh scan ran) does not break the next run with stdin on the same
// channel. kill.sh's loop variable once overwrote the loop's stdin file
// name ("PID/environ"): the next Runner run failed with exit 2, "cannot
// create PID/environ" (CI, the docker and k8s tmux channels' second send).
func TestRunAfterLeftoverKill(t *testing.T) {
	p := localPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 3 {
		res, err := p.Script(ctx, "sleep 300 >/dev/null 2>&1 </dev/null & echo left", "/", time.Minute)
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 || res.Stdout != "left\n" {
			t.Fatalf("round %d: the script that leaves a process: %+v, %v", i, res, err)
		}
		out, errs, code, err := p.Run(ctx, []string{"cat"}, []byte("stdin bytes"))
		if err != nil || code != 0 || string(out) != "stdin bytes" {
			t.Fatalf("round %d: the run with stdin after the leftover kill: code %d, stdout %q, stderr %q, %v", i, code, out, errs, err)
		}
	}
}
