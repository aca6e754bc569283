package ssh

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// cutRelay is a TCP relay in front of sshd whose network can be cut: cut
// stalls every byte both ways and new connections hang unanswered (packets
// dropped, as on a link that went down); heal lets them flow again.
type cutRelay struct {
	l    net.Listener
	to   string
	mu   sync.Mutex
	open chan struct{} // closed while the link is up
}

func newCutRelay(t *testing.T, to string) *cutRelay {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &cutRelay{l: l, to: to, open: make(chan struct{})}
	close(r.open)
	t.Cleanup(func() { l.Close() })
	go r.serve()
	return r
}

func (r *cutRelay) port() int { return r.l.Addr().(*net.TCPAddr).Port }

func (r *cutRelay) cut() {
	r.mu.Lock()
	r.open = make(chan struct{})
	r.mu.Unlock()
}

func (r *cutRelay) heal() {
	r.mu.Lock()
	close(r.open)
	r.mu.Unlock()
}

// up waits while the link is cut.
func (r *cutRelay) up() {
	r.mu.Lock()
	ch := r.open
	r.mu.Unlock()
	<-ch
}

func (r *cutRelay) serve() {
	for {
		c, err := r.l.Accept()
		if err != nil {
			return
		}
		go func() {
			r.up()
			s, err := net.Dial("tcp", r.to)
			if err != nil {
				c.Close()
				return
			}
			go r.pipe(s, c)
			r.pipe(c, s)
		}()
	}
}

// pipe copies src to dst, each chunk only while the link is up.
func (r *cutRelay) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.up()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// cutConfig is an ssh_config whose alias "cut" reaches s through the relay,
// with keepalives every second, so a dead link is seen within seconds.
func cutConfig(t *testing.T, s *testsshd.Server, r *cutRelay) string {
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(fmt.Sprintf("[127.0.0.1]:%d %s\n", r.port(), s.HostKeyPub)), 0o600); err != nil {
		t.Fatal(err)
	}
	return testsshd.WriteConfig(t, fmt.Sprintf("Host cut\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n"+
		"  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n"+
		"  ServerAliveInterval 1\n  ServerAliveCountMax 2\n  ConnectTimeout 2\n", r.port(), s.User, s.UserKey, kh))
}

// A network cut mid-turn: the job lives on (another route to the host sees
// it running), the plugin reads it unknown, never ended or lost, and once
// the link is back the turn has settled and is read.
func TestJobSurvivesNetworkCut(t *testing.T) {
	ctx := waitfor.Context(t, 4*time.Minute)
	h := newJobHost(t, testsshd.Options{})
	relay := newCutRelay(t, h.s.Addr())
	cfg := cutConfig(t, h.s, relay)
	p := drive.Start(t, caller.Config{Name: "ssh", Argv: []string{pluginBin(t), "--config", cfg, "--jobs-root", h.root},
		Need: []string{"job", "channel"}}).Plugin
	direct := h.start(t)
	host := protocol.Target{Host: protocol.HostRef{Name: "cut"}}
	key := newKey("cut")
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: key,
		Spec: h.spec("a", ".", map[string]string{"MU_TEST_AGENT_MS": "4000"})})

	if err != nil {
		t.Fatalf("job.start: %v", err)
	}
	jt := protocol.Target{Host: host.Host, Job: &protocol.JobRef{Kind: JobKind, Key: key, Handle: res.Handle},
		Agent: &protocol.AgentRef{Workstream: "ws", Name: "a", Incarnation: 1}}
	djt := h.jobTarget(key, res.Handle, "a")
	drive.Baseline(t, ctx, p, jt)
	if _, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: "through the cut", MsgID: "m1", Mode: protocol.ModeFollowUp}); err != nil {
		t.Fatalf("channel.send: %v", err)
	}

	relay.cut()
	st, err := caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt})
	if err != nil || st.State != protocol.JobUnknown {
		t.Fatalf("job.status over the cut link: %+v %v, want unknown", st, err)
	}
	if st, err := caller.Invoke(ctx, direct, protocol.MethodJobStatus, protocol.Base{Target: djt}); err != nil || st.State != protocol.JobRunning {
		t.Fatalf("job.status by another route during the cut: %+v %v", st, err)
	}
	// The turn settles while the link is down (seen by the other route).
	drive.Settled(t, ctx, direct, djt, 0)
	relay.heal()

	waitfor.Eventually(t, "job.status running once the link is back", func() bool {
		st, err := caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt})
		return err == nil && st.State == protocol.JobRunning
	})
	if o := drive.Settled(t, ctx, p, jt, 0); o.Runs != 1 || o.LastText != "agent: through the cut" {
		t.Fatalf("the turn read after the cut: %+v", o)
	}
	if _, err := caller.Invoke(ctx, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: key}); err != nil {
		t.Fatalf("job.stop: %v", err)
	}
}

// sshd restarted (every connection dropped) under a running job, mid-turn:
// the job runs on, the plugin reconnects, the turn is read and the next
// delivery works.
func TestJobSurvivesSSHDRestart(t *testing.T) {
	ctx := waitfor.Context(t, 4*time.Minute)
	h := newJobHost(t, testsshd.Options{})
	p := h.start(t)
	key := newKey("restart")
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: h.host()}, Key: key,
		Spec: h.spec("a", ".", map[string]string{"MU_TEST_AGENT_MS": "3000"})})

	if err != nil {
		t.Fatalf("job.start: %v", err)
	}
	jt := h.jobTarget(key, res.Handle, "a")
	drive.Baseline(t, ctx, p, jt)
	if _, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: "one", MsgID: "m1", Mode: protocol.ModeFollowUp}); err != nil {
		t.Fatalf("channel.send: %v", err)
	}
	h.s.Restart(t)
	var st protocol.JobStatus
	waitfor.Eventually(t, "job.status answers after the restart", func() bool {
		st, err = caller.Invoke(ctx, p, protocol.MethodJobStatus, protocol.Base{Target: jt})
		if err == nil && (st.State == protocol.JobEnded || st.State == protocol.JobLost) {
			t.Fatalf("job.status after sshd restarted: %+v", st)
		}
		return err == nil && st.State == protocol.JobRunning
	})
	if o := drive.Settled(t, ctx, p, jt, 0); o.Runs != 1 || o.LastText != "agent: one" {
		t.Fatalf("the turn across the restart: %+v", o)
	}
	sr, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: "two", MsgID: "m2", Mode: protocol.ModeFollowUp})
	if err != nil || sr.Baseline == nil || *sr.Baseline != 1 {
		t.Fatalf("channel.send after the restart: %+v %v", sr, err)
	}
	if o := drive.Settled(t, ctx, p, jt, 1); o.Runs != 2 || !strings.HasSuffix(o.LastText, "two") {
		t.Fatalf("the next turn: %+v", o)
	}
	if _, err := caller.Invoke(ctx, p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: jt}, Key: key}); err != nil {
		t.Fatalf("job.stop: %v", err)
	}
}
