//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/dockercli"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

const netTrials = 5

// execOutcome judges a link.exec cut under it: "timeout" (exitCode null),
// "unknown-outcome" or "retryable" (an error reply of that kind), or a
// description of anything else.
func execOutcome(res protocol.ExecResult, err error) string {
	var re *caller.RemoteError
	switch {
	case err == nil && res.ExitCode == nil:
		return "timeout"
	case err == nil:
		return fmt.Sprintf("exit %d", *res.ExitCode)
	case errors.As(err, &re):
		return string(re.Kind)
	}
	return "no answer: " + err.Error()
}

// cutTrial runs one trial of a fault under a running link.exec: the script
// (marked by a unique sleep) is seen running, cut() is applied, the call
// must answer with a kind in ok; heal() brings the host back, after which
// no process of the script may remain, and a next call on the same plugin
// must work.
func cutTrial(t *testing.T, p *started, tg protocol.Target, ctr string, i int, timeout time.Duration,
	ok map[string]bool, cut, heal func(context.Context) error) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	marker := fmt.Sprintf("%d", 7100+i*7+int(time.Now().UnixNano()%5))
	script := fmt.Sprintf("sleep %s.1 & (sleep %s.2; echo x) & sleep %s.3; echo done", marker, marker, marker)
	type answer struct {
		res protocol.ExecResult
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		res, err := p.Exec(ctx, tg, script, ".", timeout)
		ch <- answer{res, err}
	}()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	_, err := waitProcs(wctx, ctr, "sleep "+marker, true)
	wcancel()
	if err != nil {
		t.Errorf("trial %d: the script never ran: %v", i, err)
		return false
	}
	if err := cut(ctx); err != nil {
		t.Errorf("trial %d: cut: %v", i, err)
		_ = heal(ctx)
		return false
	}
	cutAt := time.Now()
	a := <-ch // the caller bounds it: timeoutMs + one grace, or it is "no answer"
	got := execOutcome(a.res, a.err)
	took := time.Since(cutAt).Round(time.Millisecond)
	if err := heal(ctx); err != nil {
		t.Errorf("trial %d: heal: %v", i, err)
		return false
	}
	good := true
	if !ok[got] {
		t.Errorf("trial %d: the cut call answered %s, want one of %v", i, got, ok)
		good = false
	}
	// The host is back: within a bounded wait nothing of the script runs.
	wctx, wcancel = context.WithTimeout(ctx, 30*time.Second)
	left, err := waitProcs(wctx, ctr, "sleep "+marker, false)
	wcancel()
	if err != nil || len(left) > 0 {
		t.Errorf("trial %d: after the host came back, the script still runs: %v (%v)", i, left, err)
		good = false
	}
	// The next call works (a retryable refusal while reconnecting is fine).
	var last string
	for n := 0; n < 20; n++ {
		res, err := p.Exec(ctx, tg, "echo back", ".", 10*time.Second)
		if err == nil && res.ExitCode != nil && *res.ExitCode == 0 && res.Stdout == "back\n" {
			last = ""
			break
		}
		last = execOutcome(res, err)
		time.Sleep(500 * time.Millisecond)
	}
	if last != "" {
		t.Errorf("trial %d: the host is back but calls fail: %s", i, last)
		good = false
	}
	t.Logf("trial %d: answered %s, %v after the cut", i, got, took)
	return good
}

// TestDrillNetworkCut: host-b (reached through the bastion) is cut off its
// network mid-exec, and host-a (direct) is paused mid-exec.
func TestDrillNetworkCut(t *testing.T) {
	e := getEnv(t)
	ok := map[string]bool{"timeout": true, string(protocol.UnknownOutcome): true}
	t.Run("disconnect-host-b", func(t *testing.T) {
		ctr, err := containerID(e.Project, "host-b")
		if err != nil {
			t.Fatal(err)
		}
		network := e.Project + "_inner"
		p := startPlugin(t, e.sshPlugin())
		good := 0
		for i := 0; i < netTrials; i++ {
			if cutTrial(t, p, drive.HostTarget("host-b"), ctr, i, 4*time.Second, ok,
				func(ctx context.Context) error {
					_, err := dockercli.DockerCLI(ctx, "network", "disconnect", network, ctr)
					return err
				},
				func(ctx context.Context) error {
					_, err := dockercli.DockerCLI(ctx, "network", "connect", "--alias", "host-b", network, ctr)
					return err
				}) {
				good++
			}
		}
		drillLine(t, "network-cut-disconnect", netTrials, good)
	})
	t.Run("pause-host-a", func(t *testing.T) {
		ctr, err := containerID(e.Project, "host-a")
		if err != nil {
			t.Fatal(err)
		}
		p := startPlugin(t, e.sshPlugin())
		good := 0
		for i := 0; i < netTrials; i++ {
			if cutTrial(t, p, drive.HostTarget("host-a"), ctr, i, 3*time.Second, ok,
				func(ctx context.Context) error { _, err := dockercli.DockerCLI(ctx, "pause", ctr); return err },
				func(ctx context.Context) error { _, err := dockercli.DockerCLI(ctx, "unpause", ctr); return err }) {
				good++
			}
		}
		drillLine(t, "network-cut-pause", netTrials, good)
	})
}

// TestDrillSSHDRestart: host-b's sshd is restarted (the container) under a
// running exec: the call answers with an error of the right kind, and the
// next call reconnects.
func TestDrillSSHDRestart(t *testing.T) {
	e := getEnv(t)
	ctr, err := containerID(e.Project, "host-b")
	if err != nil {
		t.Fatal(err)
	}
	p := startPlugin(t, e.sshPlugin())
	ok := map[string]bool{string(protocol.UnknownOutcome): true, "timeout": true}
	good := 0
	for i := 0; i < netTrials; i++ {
		if cutTrial(t, p, drive.HostTarget("host-b"), ctr, 100+i, 20*time.Second, ok,
			func(ctx context.Context) error {
				_, err := dockercli.DockerCLI(ctx, "restart", "-t", "1", ctr)
				return err
			},
			func(ctx context.Context) error { return waitSSHD(ctx, ctr) }) {
			good++
		}
	}
	drillLine(t, "sshd-restart", netTrials, good)
}

// waitSSHD waits until the container's sshd listens again.
func waitSSHD(ctx context.Context, ctr string) error {
	if waitfor.PollContext(ctx, 200*time.Millisecond, func() bool {
		_, err := dockercli.DockerCLI(ctx, "exec", ctr, "sh", "-c", "ps -eo args= | grep -q '^sshd: /usr/sbin/sshd -D' || ps -eo args= | grep -q '^/usr/sbin/sshd -D'")
		return err == nil
	}) {
		return nil
	}
	return ctx.Err()
}
