package contract

import (
	"context"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// manyWatches is how many watches channel/many-watches holds open at once:
// more than OpenSSH's default MaxSessions (10), the limit a plugin that
// gives each watch a session of its own meets first.
const manyWatches = 24

// checkChannelManyWatches (channel/many-watches): with many watches open
// on one agent, other calls still answer and succeed (job.status reads
// running, readStates reads, a send to the agent is confirmed), and the
// turn it starts settles every watch, each with exactly one notification.
func checkChannelManyWatches(t *T, ch *chanSession) {
	b := ch.settledBaseline()
	watches := make([]*caller.Watch, 0, manyWatches)
	defer func() {
		for _, w := range watches {
			w.Cancel()
		}
	}()
	for i := 0; i < manyWatches; i++ {
		w, err := ch.p.Watch(t.Ctx(), protocol.WatchParams{Base: ch.base(), AfterRuns: protocol.Int64(b)}, 0)
		if err != nil {
			t.Failf("channel.watch %d of %d (afterRuns %d): %v", i+1, manyWatches, b, err)
		}
		watches = append(watches, w)
	}
	st, err := caller.Invoke(t.Ctx(), ch.p, protocol.MethodJobStatus, protocol.Base{Target: ch.j.target()})
	if err != nil {
		t.Failf("job.status with %d watches open: %v", manyWatches, err)
	}
	t.Check(st.State == protocol.JobRunning, "job.status with %d watches open reads %s (%s), want running", manyWatches, st.State, st.Reason)
	ch.read()
	ch.send(protocol.ModeFollowUp, textHello, t.Unique("msg"))
	ctx, cancel := context.WithTimeout(t.Ctx(), settleBudget)
	defer cancel()
	for i, w := range watches {
		n, err := w.Wait(ctx)
		if err != nil {
			t.Failf("watch %d of %d: no notification: %v", i+1, manyWatches, err)
		}
		if !t.Check(n.Settled != nil, "watch %d of %d ended with %s, want watch/settled", i+1, manyWatches, n.Method) {
			return
		}
		t.Check(n.Settled.Observation.Runs == b+1, "watch %d of %d settled at runs %d, want %d", i+1, manyWatches, n.Settled.Observation.Runs, b+1)
	}
}
