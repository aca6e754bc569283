package docker

import (
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
)

// Runner is the tmuxjob.Runner for container ctr, over its pooled exec
// channels (execchan.Pool.Run): argv and stdin travel length-prefixed on
// the channel's stdin, never spliced into a command line, so a run costs a
// round trip on a live channel (well under a millisecond) instead of an API
// exec (~50 ms). Its runs are marked like link.exec's: a run's leftovers
// are killed when it ends, and a cancelled run is killed before Run
// returns.
func (b *Backend) Runner(ctr string) tmuxjob.Runner { return b.hosts.Pool(ctr) }
