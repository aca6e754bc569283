package ssh

import (
	"path"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The claude adapter on an SSH host (a user's own machine), over the
// Claude Code double, with a Claude Code home of its own
// (CLAUDE_CONFIG_DIR) where it never ran: the first-run screens read
// blocked, naming each, and answers reach them; the plugin writes nothing
// in that home; a long message is read with no permission dialog; an API
// error (StopFailure) settles its turn and the next one works.
func TestClaudeAdapterOnSSHHost(t *testing.T) {
	ctx := waitfor.Context(t, 5*time.Minute)
	h := newJobHost(t, testsshd.Options{})
	dir := path.Join(h.s.Home, h.root)
	b := New(Config{SSHConfig: h.s.Config}, nil)
	defer b.Close()
	if err := agent.InstallDouble(ctx, b.Runner(h.s.Alias), "claude", path.Join(dir, "bin", "claude")); err != nil {
		t.Fatal(err)
	}
	p := h.start(t)
	if r, err := p.Exec(ctx, h.host(), "mkdir -p "+h.root+"/tree "+h.root+"/claude", ".", time.Minute); err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("link.exec: %+v %v", r, err)
	}
	key := newKey("claude")
	s := h.spec("c", dir+"/tree", map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-secret-0123456789abcdefghij", "CLAUDE_CONFIG_DIR": dir + "/claude"})
	s.Harness, s.Cmd = "claude", shQuote(path.Join(dir, "bin", "claude"))
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: h.host()}, Key: key, Spec: s})
	if err != nil {
		t.Fatalf("job.start: %v", err)
	}
	jt := h.jobTarget(key, res.Handle, "c")
	reading := func() protocol.Reading {
		m, err := caller.Invoke(ctx, p, protocol.MethodChannelReadStates, protocol.ReadStatesParams{Base: protocol.Base{Target: jt}, Targets: []protocol.AgentName{{Workstream: "ws", Name: "c"}}})
		if err != nil {
			t.Fatalf("channel.readStates: %v", err)
		}
		return m["ws/c"]
	}
	drive.ClaudeScreens(t, reading, func(keys string) {
		if _, err := caller.Invoke(ctx, p, protocol.MethodChannelAnswer, protocol.AnswerParams{Base: protocol.Base{Target: jt}, Keys: []string{keys}}); err != nil {
			t.Fatalf("channel.answer: %v", err)
		}
	})
	drive.ClaudeTurns(t, func(i int, text string) {
		if _, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: text, MsgID: newKey("m"), Mode: protocol.ModeFollowUp}); err != nil {
			t.Fatalf("channel.send: %v", err)
		}
	}, func(i int) protocol.Observation { return drive.Settled(t, ctx, p, jt, int64(i)) })
	// The double keeps its sessions there (projects/), as Claude Code
	// does; the first-run answers file is not written.
	if r, err := p.Exec(ctx, h.host(), "ls -A "+h.root+"/claude", ".", time.Minute); err != nil || strings.Contains(r.Stdout, ".claude.json") {
		t.Fatalf("the plugin wrote in the user's Claude Code home: %+v %v", r, err)
	}
}
