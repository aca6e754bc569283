//go:build integration

package integration

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/backend/ssh"
	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller/replay"
)

// The SIGKILL drills of the job seam against mu-plugin-ssh: the same
// trials as the docker kind's (drill_job_test.go), on a real sshd on this
// machine (testsshd, a plain user), so the host's processes and files are
// counted here directly.

func TestDrillKillSSHJobStart(t *testing.T) {
	drillKillJobStart(t, newSSHJobDrill(t), "kill-ssh-job.start")
}

func TestDrillKillSSHJobStop(t *testing.T) {
	drillKillJobStop(t, newSSHJobDrill(t), "kill-ssh-job.stop")
}

func TestDrillKillSSHChannelSend(t *testing.T) {
	drillKillChannelSend(t, newSSHJobDrill(t), "kill-ssh-channel.send")
}

// newSSHJobDrill starts a testsshd host with a jobs root of its own and the
// test agent installed, and mu-plugin-ssh (from MU_PLUGINS_BIN) for it.
func newSSHJobDrill(t *testing.T) *jobDrill {
	bin := os.Getenv("MU_PLUGINS_BIN")
	if bin == "" {
		t.Fatal("MU_PLUGINS_BIN must name the built plugins (run through `make integration`, or after `make build`)")
	}
	s := testsshd.Start(t, testsshd.Options{MaxSessions: 30})
	run := words.RandHex(4)
	rel := "mu-jobs-drill-" + run
	root := filepath.Join(s.Home, rel)
	d := &jobDrill{kind: ssh.JobKind, agent: filepath.Join(root, "bin", "mu-test-agent"),
		drill: &drill{run: run, s: spec{"ssh", []string{filepath.Join(bin, "mu-plugin-ssh"), "--config", s.Config, "--jobs-root", rel, "--max-sessions", "30"}}},
		host:  protocol.Target{Host: protocol.HostRef{Name: s.Alias}}}
	b := ssh.New(ssh.Config{SSHConfig: s.Config}, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _, _, _ = b.Runner(s.Alias).Run(ctx, []string{"/bin/sh", "-c", `tmux -S "$1/tmux.sock" kill-server 2>/dev/null; rm -rf "$1"`, "sh", root}, nil)
		b.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := agent.Install(ctx, b.Runner(s.Alias), d.agent); err != nil {
		t.Fatalf("installing the test agent: %v", err)
	}
	d.count = localCounter(d.agent, root)
	d.inbox = func(context.Context) (string, error) { return localInbox(root), nil }
	d.p = startPlugin(t, d.s)
	var err error
	if d.j, err = replay.Open(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	return d
}

// localCounter counts on this machine, as countScript does in a
// container: "job" KEY, the test agents whose environment carries
// MU_IT_JOBKEY=KEY (an agent's own subshell is the same agent); "msg"
// MSGID, the inbox deliveries under root carrying the msgId.
func localCounter(agentPath, root string) counter {
	cmdline := "sh\x00" + agentPath + "\x00"
	return func(_ context.Context, what, key string) (int, error) {
		n := 0
		switch what {
		case "job":
			procs, _ := filepath.Glob("/proc/[0-9]*")
			for _, p := range procs {
				env, _ := os.ReadFile(p + "/environ")
				if !bytes.Contains(append([]byte{0}, env...), []byte("\x00MU_IT_JOBKEY="+key+"\x00")) {
					continue
				}
				if cl, _ := os.ReadFile(p + "/cmdline"); string(cl) != cmdline {
					continue
				}
				if cl, _ := os.ReadFile("/proc/" + ppidOf(p) + "/cmdline"); string(cl) == cmdline {
					continue // the agent's own subshell
				}
				n++
			}
		case "msg":
			for _, l := range strings.Split(localInbox(root), "\n") {
				if l == key {
					n++
				}
			}
		}
		return n, nil
	}
}

// ppidOf is the parent pid of the process at /proc/PID.
func ppidOf(proc string) string {
	st, _ := os.ReadFile(proc + "/stat")
	s := string(st)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		if f := strings.Fields(s[i+1:]); len(f) > 1 {
			return f[1]
		}
	}
	return "0"
}

// localInbox lists every msgid in the inboxes under root, then "end".
func localInbox(root string) string {
	files, _ := filepath.Glob(filepath.Join(root, "jobs", "*", "chan", "inbox", "*", "msgid"))
	var b strings.Builder
	for _, f := range files {
		if m, err := os.ReadFile(f); err == nil {
			b.WriteString(strings.TrimSpace(string(m)) + "\n")
		}
	}
	return b.String() + "end"
}
