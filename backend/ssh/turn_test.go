package ssh

import (
	"bytes"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/tmuxjob"
	"github.com/mu-org/mu-plugins/protocol"
)

// A settled turn of several MiB is read back exactly (channel.lastRun and
// channel.watch), over SFTP where the host serves it and by a script where
// it does not (by a script, there under busybox ash); with the default
// settle text bound, its head is read and the text cut. The record never
// passes through a script's output over SFTP.
func TestLargeTurnRecord(t *testing.T) {
	for _, o := range []testsshd.Options{{}, {NoSFTP: true, BusyboxSh: true}} {
		name := "sftp"
		if o.NoSFTP {
			name = "no-sftp-busybox"
		}
		t.Run(name, func(t *testing.T) { largeTurn(t, o) })
	}
}

func largeTurn(t *testing.T, o testsshd.Options) {
	ctx := waitfor.Context(t, 3*time.Minute)
	h := newJobHost(t, o)
	b := New(Config{SSHConfig: h.s.Config}, nil)
	defer b.Close()
	r := b.Runner(h.s.Alias)
	root := path.Join(h.s.Home, h.root)
	big, err := tmuxjob.New(r, tmuxjob.Options{Root: root, Kind: JobKind, Channel: ChannelName, MaxSettleText: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	key := newKey("big")
	base := protocol.Base{Target: h.jobTarget(key, "", "a")}
	if _, err := big.Start(ctx, protocol.JobStartParams{Base: base, Key: key, Spec: h.spec("a", ".", nil)}); err != nil {
		t.Fatalf("start: %v", err)
	}
	defer func() { _ = big.Stop(ctx, key) }()
	var bl *protocol.Baseline
	waitfor.Eventually(t, "baseline", func() bool {
		bl, err = big.Baseline(ctx, key)
		return err == nil && bl != nil
	})
	// Turn bl.Runs+1's record, as the harness writes it: 5 MiB of text,
	// every byte value but NUL and a multi-byte rune in it.
	var text strings.Builder
	for i := 0; text.Len() < 5<<20; i++ {
		text.WriteString("line " + strings.Repeat(string(rune('a'+i%26)), i%97) + " é ✓\t\"\\\n")
	}
	write := func(n int64, rec string) {
		turn := path.Join(big.ChannelDir(key), "out", "turns", bl.Incarnation+"."+strconv.FormatInt(n, 10))
		if _, _, code, err := r.Run(ctx, []string{"/bin/sh", "-c", `cat >"$1.tmp" && mv "$1.tmp" "$1"`, "sh", turn}, []byte(rec)); err != nil || code != 0 {
			t.Fatalf("writing the record: exit %d %v", code, err)
		}
	}
	write(bl.Runs+1, "at=1700000000000\nmsg=m-big\n\n"+text.String())
	logBefore := len(h.s.LogText())
	obs, err := big.LastRun(ctx, protocol.LastRunParams{Base: base, AfterRuns: bl.Runs, Inc: bl.Incarnation})
	if err != nil || obs == nil {
		t.Fatalf("lastRun: %+v %v", obs, err)
	}
	if obs.LastText != text.String() || obs.LastTextTruncated {
		t.Fatalf("lastRun's text: %d bytes (truncated %v), want the record's %d exactly", len(obs.LastText), obs.LastTextTruncated, text.Len())
	}
	after := bl.Runs
	_, wait, err := big.Watch(ctx, protocol.WatchParams{Base: base, AfterRuns: &after, Inc: bl.Incarnation})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	method, note := wait(ctx)
	ws, ok := note.(protocol.WatchSettled)
	if method != protocol.NotifyWatchSettled || !ok || ws.Observation.LastText != text.String() {
		t.Fatalf("watch: %s, %d bytes of text", method, len(ws.Observation.LastText))
	}
	if got := strings.Contains(h.s.LogText()[logBefore:], "subsystem 'sftp'"); got == o.NoSFTP {
		t.Fatalf("the record read over SFTP: %v, want %v; sshd's log:\n%s", got, !o.NoSFTP, drive.Tail(h.s.LogText()))
	}
	// The default bound: the head only, cut, and said so.
	def, err := tmuxjob.New(r, tmuxjob.Options{Root: root, Kind: JobKind, Channel: ChannelName})
	if err != nil {
		t.Fatal(err)
	}
	obs, err = def.LastRun(ctx, protocol.LastRunParams{Base: base, AfterRuns: bl.Runs, Inc: bl.Incarnation})
	if err != nil || obs == nil {
		t.Fatalf("lastRun: %+v %v", obs, err)
	}
	if !obs.LastTextTruncated || len(obs.LastText) < 128<<10 || !strings.HasPrefix(text.String(), obs.LastText) {
		t.Fatalf("lastRun, default bound: %d bytes, truncated %v", len(obs.LastText), obs.LastTextTruncated)
	}
	if !bytes.Contains([]byte(obs.LastText), []byte("é ✓")) {
		t.Fatal("the text lost its runes")
	}
	// A record whose header lines pass what is read still settles the
	// turn (its time kept), with an error instead of its text.
	write(bl.Runs+2, "at=1700000000001\nmsg="+strings.Repeat("m", 400<<10)+"\n\ntext")
	obs, err = def.LastRun(ctx, protocol.LastRunParams{Base: base, AfterRuns: bl.Runs + 1, Inc: bl.Incarnation})
	if err != nil || obs == nil || obs.Since != 1700000000001 || !strings.Contains(obs.LastError, "header lines pass") || !obs.LastTextTruncated {
		t.Fatalf("lastRun of a record with a long header: %+v %v", obs, err)
	}
}
