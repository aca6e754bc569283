package fake

import (
	"context"
	"os"
	"path/filepath"

	"github.com/mu-org/mu-plugins/internal/proc"
)

// do runs fn on the world under the store's lock (Store.Do), with every
// host whose ttl has run out made gone first: "gone is a proof: the machine
// and its worktrees no longer exist, and its jobs too". Such a host's jobs
// read lost and take no call, its link refuses, and its directory is
// removed. Expiry is a function of the clock, so a read sees it at once;
// the first call that sees it also saves it (ending the jobs' transcripts,
// so their views end) and removes the directories.
func (f *Fake) do(ctx context.Context, write bool, fn func(w *World) error) error {
	var gone []string
	err := f.store.Do(ctx, write, func(w *World) error {
		gone = f.expire(w, write)
		return fn(w)
	})
	if len(gone) > 0 && (!write || err != nil) {
		_ = f.store.Do(ctx, true, func(w *World) error {
			f.expire(w, true)
			return nil
		})
	}
	for _, h := range gone {
		f.removeHost(h)
	}
	return err
}

// removeHost ends a gone host's runs (in this plugin process or another:
// they carry HostVar) and removes its directory: killed, then removed (a
// run that starts after that finds no directory), then killed again (one
// that started in between).
func (f *Fake) removeHost(handle string) {
	dir := f.hostPath(handle)
	proc.KillCarrying(HostVar, dir)
	_ = os.RemoveAll(dir)
	proc.KillCarrying(HostVar, dir)
}

// expire makes gone every host past its ttl, and loses its jobs; with
// write, their transcripts say so.
func (f *Fake) expire(w *World, write bool) []string {
	now := f.now()
	var gone []string
	for _, h := range w.Hosts {
		if h.State != stateUp || h.Result.DeadlineAt == nil || now < *h.Result.DeadlineAt {
			continue
		}
		h.State, h.Released = stateGone, *h.Result.DeadlineAt
		gone = append(gone, h.Result.Handle)
		f.endHostJobs(w, h, "its host's ttl ran out: the host is gone", true, write)
	}
	return gone
}

// endHostJobs ends the jobs of host h (the fake's jobs do not outlive their
// host): lost tells that the job was not stopped but went with its host.
func (f *Fake) endHostJobs(w *World, h *Host, why string, lost, write bool) {
	for key, j := range w.Jobs {
		if j.Host != h.Result.Handle {
			continue
		}
		switch j.State {
		case statePending:
			delete(w.Jobs, key) // its start never lands on a host that is gone
		case stateRunning:
			if lost {
				j.Lost = why
			}
			f.endJob(w, j, why, write)
		}
	}
}

// hostPath is a host's login directory (it may not exist).
func (f *Fake) hostPath(name string) string { return filepath.Join(f.root, "hosts", name) }
