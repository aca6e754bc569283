package docker_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The claude adapter through mu-plugin-docker, over the Claude Code
// double, on a fresh container (docs/harness.md "What the plugin writes
// in a home"): its first-run screens are answered before the CLI starts,
// so the turns need nobody at the pane; a long message is read with no
// permission dialog; an API error (StopFailure) settles its turn.
func TestClaudeAdapterInAFreshContainer(t *testing.T) {
	ctx := waitfor.Context(t, 5*time.Minute)
	p, host := spawnPlugin(t, ctx)
	key := "claude-" + strings.ReplaceAll(t.Name(), "/", "-")
	s := jobSpec("c", ".", map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-secret-0123456789abcdefghij"})
	s.Harness, s.Cmd = "claude", "sh -c "+words.ShQuote(string(agent.Double("claude")))+" claude"
	res, err := caller.Invoke(ctx, p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: host}, Key: key, Spec: s})
	if err != nil {
		t.Fatalf("job.start: %v", err)
	}
	jt := drive.JobTarget(host, "docker", key, res.Handle, "ws", "c")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the job's terminal:\n%s", mustExec(t, ctx, p, host, "tail -c 3000 $HOME/.mu-jobs/jobs/*/log 2>&1; tail -c 3000 /*/.mu-jobs/jobs/*/log 2>&1; true"))
		}
	})
	drive.Baseline(t, ctx, p, jt)
	drive.ClaudeTurns(t, func(i int, text string) {
		if _, err := caller.Invoke(ctx, p, protocol.MethodChannelSend, protocol.SendParams{Base: protocol.Base{Target: jt}, Text: text, MsgID: fmt.Sprintf("m%d", i), Mode: protocol.ModeFollowUp}); err != nil {
			t.Fatalf("channel.send: %v", err)
		}
	}, func(i int) protocol.Observation { return drive.Settled(t, ctx, p, jt, int64(i)) })
}
