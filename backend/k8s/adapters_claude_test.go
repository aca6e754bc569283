package k8s_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The claude adapter through mu-plugin-k8s, over the Claude Code double,
// on a fresh pod (docs/harness.md "What the plugin writes in a home"):
// its first-run screens are answered before the CLI starts, so the turns
// need nobody at the pane (drive.ClaudeTurns).
func TestClaudeAdapterInAFreshPod(t *testing.T) {
	ctx := waitfor.Context(t, 5*time.Minute)
	p := start(t)
	res := p.Acquire(t, "key-claude", map[string]string{"ttl": "1h"})
	host := protocol.Target{Host: protocol.HostRef{Name: "box", Handle: res.Handle, Instance: p.decl.Instance}}
	s := protocol.JobSpec{Workstream: "ws", Name: "c", Harness: "claude", Role: "full-access", CommandSource: "test", Cwd: ".",
		Cmd: "sh -c " + words.ShQuote(string(agent.Double("claude"))) + " claude",
		Env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-secret-0123456789abcdefghij"}}
	started, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: "claude-1", Spec: s})
	if err != nil {
		t.Fatalf("job.start: %v\n%s", err, p.Stderr.String())
	}
	jt := drive.JobTarget(host, "k8s", "claude-1", started.Handle, "ws", "c")
	drive.Baseline(t, ctx, p.Plugin.Plugin, jt)
	drive.ClaudeTurns(t, func(i int, text string) {
		if _, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: text, MsgID: fmt.Sprintf("m%d", i), Mode: protocol.ModeFollowUp}); err != nil {
			t.Fatalf("channel.send: %v", err)
		}
	}, func(i int) protocol.Observation { return drive.Settled(t, ctx, p.Plugin.Plugin, jt, int64(i)) })
}
