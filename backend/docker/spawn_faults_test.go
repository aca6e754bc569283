package docker_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/dockercli"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
	"github.com/mu-org/mu-plugins/protocol/caller/replay"
)

// startAgent starts the test agent as a job on host and waits for it to be
// ready; it returns the job's target.
func startAgent(t testing.TB, ctx context.Context, p *caller.Plugin, host protocol.Target, name string, env map[string]string) protocol.Target {
	t.Helper()
	key := "job-" + name + "-" + sandboxtest.NewPrefix()
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: key, Spec: jobSpec(name, ".", env)})
	if err != nil {
		t.Fatalf("job.start: %v", err)
	}
	jt := drive.JobTarget(host, "docker", key, res.Handle, "ws", name)
	drive.Baseline(t, ctx, p, jt)
	return jt
}

// jobStatus reads job.status, read again while it is unknown (a read mu
// repeats): an exec channel the restart broke answers unknown once.
func jobStatus(t testing.TB, ctx context.Context, p *caller.Plugin, jt protocol.Target) protocol.JobStatus {
	t.Helper()
	var st protocol.JobStatus
	for i := 0; i < 5; i++ {
		var err error
		if st, err = caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt}); err != nil {
			t.Fatalf("job.status: %v", err)
		}
		if st.State != protocol.JobUnknown {
			break
		}
	}
	return st
}

// The container restarted, then killed mid-job, then removed: job.status
// and host.status say each truthfully.
func TestContainerRestartedKilledRemoved(t *testing.T) {
	ctx := waitfor.Context(t, 5*time.Minute)
	p, host := spawnPlugin(t, ctx)
	ctr := host.Host.Handle
	send := func(jt protocol.Target, text string) {
		t.Helper()
		if _, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: text, MsgID: sandboxtest.NewPrefix(), Mode: protocol.ModeFollowUp}); err != nil {
			t.Fatalf("channel.send: %v", err)
		}
	}

	// A restart: the container runs, its tmux server and job do not.
	j1 := startAgent(t, ctx, p, host, "a1", nil)
	send(j1, "a long turn [[ms:600000]]")
	dockercli.Docker(t, "restart", "-t", "1", ctr)
	if st := jobStatus(t, ctx, p, j1); st.State != protocol.JobLost {
		t.Fatalf("job.status after a container restart: %+v", st)
	}
	if hs := must[protocol.HostStatus](t, "host.status")(caller.Invoke(ctx, p, protocol.MethodHostStatus, protocol.Base{Target: host})); hs.State != protocol.HostUp {
		t.Fatalf("host.status after a restart: %+v", hs)
	}

	// Killed mid-job: the job is lost, the host needs a human.
	j2 := startAgent(t, ctx, p, host, "a2", nil)
	send(j2, "a long turn [[ms:600000]]")
	dockercli.Docker(t, "kill", ctr)
	if st := jobStatus(t, ctx, p, j2); st.State != protocol.JobLost || !strings.Contains(st.Reason, "exited") {
		t.Fatalf("job.status with the container killed: %+v", st)
	}
	if hs := must[protocol.HostStatus](t, "host.status")(caller.Invoke(ctx, p, protocol.MethodHostStatus, protocol.Base{Target: host})); hs.State != protocol.HostNeedsHuman || hs.Remedy == "" {
		t.Fatalf("host.status with the container killed: %+v", hs)
	}
	_, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: "late", Spec: jobSpec("late", ".", nil)})
	var re *caller.RemoteError
	if !asRemote(err, &re) || re.Kind != protocol.Permanent {
		t.Fatalf("job.start in a stopped container: %v, want a permanent error", err)
	}

	// Removed: the host is gone, the job lost; stop and lookup resolve.
	dockercli.Docker(t, "rm", "-f", ctr)
	if hs := must[protocol.HostStatus](t, "host.status")(caller.Invoke(ctx, p, protocol.MethodHostStatus, protocol.Base{Target: host})); hs.State != protocol.HostGone {
		t.Fatalf("host.status of a removed container: %+v", hs)
	}
	if st := jobStatus(t, ctx, p, j2); st.State != protocol.JobLost {
		t.Fatalf("job.status in a removed container: %+v", st)
	}
	if _, err := caller.Invoke(ctx, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: j2}, Key: j2.Job.Key}); err != nil {
		t.Fatalf("job.stop in a removed container: %v", err)
	}
	l := must[protocol.JobLookupResult](t, "job.lookup")(caller.Invoke(ctx, p, protocol.MethodJobLookup, protocol.LookupParams{Base: protocol.Base{Target: host}, Key: j2.Job.Key, Fence: true}))
	if !l.None {
		t.Fatalf("job.lookup in a removed container: %+v", l)
	}
}

func asRemote(err error, re **caller.RemoteError) bool { return errors.As(err, re) }

// A delivery whose plugin was SIGKILLed after it wrote the delivery on the
// host and before it answered is resolved through channel.receipt by the
// next invocation (protocol/caller/replay): accepted, delivered once, and a
// resend delivers nothing twice.
func TestDeliveryResolvedByReceiptAfterAKill(t *testing.T) {
	ctx := waitfor.Context(t, 5*time.Minute)
	p, host := spawnPlugin(t, ctx)
	ctr := host.Host.Handle
	jt := startAgent(t, ctx, p, host, "k", map[string]string{"MU_TEST_AGENT_MS": "50"})
	root := "/home/mu/.mu-jobs"
	inbox := strings.TrimSpace(dockercli.Docker(t, "exec", ctr, "sh", "-c", `echo "$1"/jobs/*/chan/inbox`, "sh", root))
	tmuxPid := dockercli.Docker(t, "exec", ctr, "tmux", "-S", root+"/tmux.sock", "display-message", "-p", "#{pid}")
	t.Cleanup(func() { _ = exec.Command("docker", "exec", ctr, "kill", "-CONT", tmuxPid).Run() })
	j, err := replay.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	// The freezer stops the host's tmux server as soon as the delivery is
	// in the inbox: the plugin's run then hangs in its nudge, after the
	// write and before the answer. If the plugin answered first anyway (the
	// freezer lost the race), the delivery is complete: try again.
	var in *replay.Intent
	var msg string
	var params protocol.SendParams
	for attempt := 1; in == nil; attempt++ {
		if attempt > 5 {
			t.Fatalf("the plugin answered before the freezer could stop it, 5 times")
		}
		n := strings.Count(dockercli.Docker(t, "exec", ctr, "ls", inbox), "\n") + 1
		if dockercli.Docker(t, "exec", ctr, "ls", inbox) == "" {
			n = 0
		}
		freezer := exec.CommandContext(ctx, "docker", "exec", ctr, "/bin/sh", "-c", `q=$1 pid=$2 n=$3
echo ready
while :; do
	c=0
	for x in "$q"/[0-9]*; do [ -e "$x" ] && c=$((c + 1)); done
	[ "$c" -gt "$n" ] && { kill -STOP "$pid"; echo stopped; exit 0; }
done`, "sh", inbox, tmuxPid, fmt.Sprint(n))
		out, err := freezer.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := freezer.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		if !lines.Scan() || lines.Text() != "ready" {
			t.Fatalf("the freezer did not start")
		}
		msg = fmt.Sprintf("msg-kill-%d", attempt)
		params = protocol.SendParams{Base: protocol.Base{Target: jt}, Text: "delivered once " + msg, MsgID: msg, Mode: protocol.ModeFollowUp}
		type effect struct {
			in  *replay.Intent
			err error
		}
		done := make(chan effect, 1)
		go func() {
			_, in, err := j.Effect(ctx, p, protocol.MethodChannelSend.Name, "", params)
			done <- effect{in, err}
		}()
		if !lines.Scan() || lines.Text() != "stopped" {
			t.Fatalf("the freezer ended without stopping tmux")
		}
		_ = freezer.Wait()
		select {
		case e := <-done:
			t.Logf("attempt %d: the plugin answered first (%v); again", attempt, e.err)
			dockercli.Docker(t, "exec", ctr, "kill", "-CONT", tmuxPid)
			if e.err != nil {
				t.Fatalf("channel.send: %v", e.err)
			}
			continue
		case <-time.After(time.Second):
		}
		// The plugin wrote the delivery and has not answered: SIGKILL.
		if err := syscall.Kill(-p.Pgid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		e := <-done
		if e.err == nil || e.in == nil {
			t.Fatalf("the killed send: err %v, intent %v: want an unknown outcome with its intent kept", e.err, e.in)
		}
		in = e.in
		<-p.Done()
		dockercli.Docker(t, "exec", ctr, "kill", "-CONT", tmuxPid)
	}

	// The next invocation resolves it by receipt.
	if err := j.Next(); err != nil {
		t.Fatal(err)
	}
	p2 := drive.Start(t, callerConfig(t)).Plugin
	out, err := j.Resolve(ctx, p2, in)
	if err != nil || out.State != replay.Found {
		t.Fatalf("resolve: %+v %v", out, err)
	}
	var rc protocol.Receipt
	if err := json.Unmarshal(out.Result, &rc); err != nil || rc.State != protocol.ReceiptAccepted || rc.ID != msg {
		t.Fatalf("the receipt: %s %v", out.Result, err)
	}
	if left, _ := j.List(); len(left) != 0 {
		t.Fatalf("the intent stayed after it resolved: %+v", left)
	}
	// Delivered once: one inbox entry with the msgId, one turn on it; a
	// resend answers as the first time and delivers nothing.
	if rc.Runs == nil {
		t.Fatalf("the receipt carries no runs: %s", out.Result)
	}
	b := *rc.Runs
	o := drive.Settled(t, ctx, p2, jt, b)
	if o.LastText != "agent: delivered once "+msg {
		t.Fatalf("the delivery's turn: %+v", o)
	}
	again := must[protocol.SendResult](t, "channel.send again")(caller.Invoke(ctx, p2, protocol.MethodChannelSend, params))
	if again.Baseline == nil || *again.Baseline != b {
		t.Fatalf("the resend: %+v, want baseline %d", again, b)
	}
	count := dockercli.Docker(t, "exec", ctr, "sh", "-c", `grep -lxF -- "$2" "$1"/*/msgid | wc -l`, "sh", inbox, msg)
	if count != "1" {
		t.Fatalf("%s deliveries of %s in the inbox, want 1", count, msg)
	}
	// The next turn is the next delivery's: no second turn of the first.
	must[protocol.SendResult](t, "channel.send next")(caller.Invoke(ctx, p2, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: "next", MsgID: msg + "-next", Mode: protocol.ModeFollowUp}))
	if o := drive.Settled(t, ctx, p2, jt, b+1); o.LastText != "agent: next" {
		t.Fatalf("turn %d is %q, not the next delivery's", b+2, o.LastText)
	}
}
