package tmuxjob_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// What did not run is answered with the spec's kind for it, naming what to
// fix, never unknown-outcome: a host without tmux (human, the remedy says
// to install it), a delivery the host could not write (retryable, nothing
// queued), a msgId longer than one argument (permanent, naming msgId).
func TestNothingRanIsNotUnknown(t *testing.T) {
	ctx := waitfor.Context(t, 2*time.Minute)
	kind := func(err error) (*protocol.Error, bool) {
		var pe *protocol.Error
		return pe, errors.As(err, &pe)
	}

	// No tmux: a PATH with every tool of /usr/bin but it.
	bin := t.TempDir()
	ents, err := os.ReadDir("/usr/bin")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "tmux" {
			_ = os.Symlink(filepath.Join("/usr/bin", e.Name()), filepath.Join(bin, e.Name()))
		}
	}
	h := newHostOn(t, tmuxjob.LocalRunner{Env: append(tmuxjob.MinimalEnv(), "PATH="+bin)})
	_, err = h.jobs.Start(ctx, protocol.JobStartParams{Base: base("notmux"), Key: "notmux", Spec: spec("exec sleep 100")})
	if pe, ok := kind(err); !ok || pe.Kind != protocol.Human || !strings.Contains(pe.Message, "tmux is not installed") || !strings.Contains(pe.Remedy, "install tmux") {
		t.Errorf("job.start without tmux: %v, want human naming tmux with a remedy", err)
	}

	h, key := newHost(t), "nowrite"
	h.startAgent(t, key, nil, "")
	// The inbox is a file now: no delivery can be written in it.
	inbox := filepath.Join(h.jobs.ChannelDir(key), "inbox")
	if err := os.RemoveAll(inbox); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inbox, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = h.jobs.Send(ctx, protocol.SendParams{Base: base(key), Text: "hi", MsgID: "m1", Mode: protocol.ModeFollowUp})
	if pe, ok := kind(err); !ok || pe.Kind != protocol.Retryable || !strings.Contains(pe.Message, "cannot write the delivery") {
		t.Errorf("channel.send into an inbox that is a file: %v, want retryable", err)
	}

	long := strings.Repeat("m", 140<<10)
	_, err = h.jobs.Send(ctx, protocol.SendParams{Base: base(key), Text: "hi", MsgID: long, Mode: protocol.ModeFollowUp})
	if pe, ok := kind(err); !ok || pe.Kind != protocol.Permanent || !strings.Contains(pe.Message, "msgId is") {
		t.Errorf("channel.send of a 140 KiB msgId: %v, want permanent naming msgId", err)
	}
}
