//go:build integration

package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil/dockercli"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/tmuxjob/agent"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// agentPath is where the suite installs the test agent in a docker host.
const agentPath = "/home/mu/bin/mu-test-agent"

// jobsRoot is where mu-plugin-docker keeps a host's jobs (tmuxjob's Root).
const jobsRoot = "/home/mu/.mu-jobs"

// acquireHost acquires a docker host for the test (released at its end),
// installs the test agent in it, and returns its target and key.
func acquireHost(t testing.TB, p *started, key string) protocol.Target {
	t.Helper()
	ctx := waitfor.Context(t, 2*time.Minute)
	res, err := caller.Invoke(ctx, p, protocol.MethodHostAcquire, acquireParams(key))
	if err != nil {
		t.Fatalf("host.acquire %s: %v", key, err)
	}
	t.Cleanup(func() {
		_, _ = caller.Invoke(context.Background(), p, protocol.MethodHostRelease, protocol.KeyParams{Base: protocol.Base{Target: drive.HostTarget("it")}, Key: key})
	})
	if err := agent.Install(ctx, testimage.Exec{Container: res.Handle}, agentPath); err != nil {
		t.Fatalf("installing the test agent: %v", err)
	}
	return protocol.Target{Host: protocol.HostRef{Name: "it", Handle: res.Handle, Instance: p.Declaration().Instance}}
}

// agentSpec runs the test agent in cwd; MU_IT_JOBKEY marks its processes.
func agentSpec(name, key, cwd string, ms int) protocol.JobSpec {
	return protocol.JobSpec{Workstream: "it", Name: name, Harness: "mu-test-agent", Role: "full-access",
		Cmd: "exec sh " + agentPath, CommandSource: "test", Cwd: cwd,
		Env: map[string]string{"MU_IT_JOBKEY": key, "MU_TEST_AGENT_MS": strconv.Itoa(ms), "MU_TEST_AGENT_POLL_S": "1"}}
}

// countScript counts, in the container: arg "job" KEY, the test agents
// running for the job key (by MU_IT_JOBKEY in their environment; a
// subshell the agent forked is the same agent); arg
// "msg" MSGID, the inbox deliveries carrying the msgId.
const countScript = `A="sh ` + agentPath + ` "
case $1 in
job) n=0
  for e in $(grep -lzxF "MU_IT_JOBKEY=$2" /proc/[0-9]*/environ 2>/dev/null); do
    d=${e%/environ}
    [ "$(tr '\0' ' ' <$d/cmdline 2>/dev/null)" = "$A" ] || continue
    pp=$(cut -d' ' -f4 $d/stat 2>/dev/null)
    [ "$(tr '\0' ' ' </proc/$pp/cmdline 2>/dev/null)" = "$A" ] && continue # the agent's own subshell
    n=$((n+1))
  done
  echo $n ;;
msg) grep -lxF "$2" ` + jobsRoot + `/jobs/*/chan/inbox/*/msgid 2>/dev/null | wc -l ;;
esac`

// counter counts on a job host: what "job", the test agents of the job
// key; what "msg", the inbox deliveries carrying the msgId key.
type counter func(ctx context.Context, what, key string) (int, error)

// countInCtr is the counter of container ctr.
func countInCtr(ctr string) counter {
	return func(ctx context.Context, what, key string) (int, error) { return countIn(ctx, ctr, what, key) }
}

func countIn(ctx context.Context, ctr, what, key string) (int, error) {
	out, err := dockercli.DockerCLI(ctx, "exec", ctr, "sh", "-c", countScript, "count", what, key)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(out))
}

// bookkeepingTimeout bounds one docker command a test runs to look (a
// count, a listing): generous, since under load an exec can take many
// seconds, and such a command is tried again when it fails.
const bookkeepingTimeout = 45 * time.Second

// dockerRetry runs a docker command that only looks, each try bounded by
// bookkeepingTimeout, again every 300 ms while it fails, until ctx ends: a
// test's own bookkeeping failing under load is not the outcome under test.
func dockerRetry(ctx context.Context, args ...string) (string, error) {
	var out string
	var err error
	waitfor.PollContext(ctx, 300*time.Millisecond, func() bool {
		c, cancel := context.WithTimeout(ctx, bookkeepingTimeout)
		defer cancel()
		out, err = dockercli.DockerCLI(c, args...)
		return err == nil
	})
	return out, err
}

// settleCount waits (bounded by ctx) until count reports the same value
// twice 300 ms apart, and returns it: a starting agent appears, a stopped
// one goes. A count that fails (its exec slow or cut off under load) says
// nothing and is run again.
func settleCount(ctx context.Context, count counter, what, key string, want int) (int, error) {
	last := -1
	var lastErr error
	if waitfor.PollContext(ctx, 300*time.Millisecond, func() bool {
		c, cancel := context.WithTimeout(ctx, bookkeepingTimeout)
		defer cancel()
		n, err := count(c, what, key)
		if err != nil {
			lastErr = err
			return false
		}
		settled := n == want && n == last
		last = n
		return settled
	}) {
		return last, nil
	}
	if last < 0 {
		return 0, fmt.Errorf("%s %s: never counted: %v", what, key, lastErr)
	}
	return last, fmt.Errorf("%s %s: %d, want %d", what, key, last, want)
}
