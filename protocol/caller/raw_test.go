package caller

import (
	"context"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

func startRaw(t *testing.T, cfg Config) *Raw {
	t.Helper()
	r, err := StartRaw(context.Background(), cfg)
	if err != nil {
		t.Fatalf("StartRaw: %v", err)
	}
	t.Cleanup(func() { r.Stop() })
	return r
}

func recvLine(t *testing.T, r *Raw) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := r.Recv(ctx)
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	return string(l)
}

const rawInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":{"min":1,"max":1},"mu":"5"}}`

// A Raw writes exactly the lines it is given and hands back exactly the
// lines the plugin writes, judging none: a line that would break a Plugin
// is just the next line. Its stop is the caller's: shutdown, stdin
// closed, the plugin's group empty.
func TestRawExactLines(t *testing.T) {
	h := newHarness(t, "raw", "raw:not-json")
	r := startRaw(t, h.cfg)
	if r.Pgid() <= 0 || r.Pgid() == syscall.Getpgrp() {
		t.Fatalf("the plugin is not in its own group: %d", r.Pgid())
	}
	ctx := context.Background()
	if err := r.Send(ctx, rawInit); err != nil {
		t.Fatal(err)
	}
	if l := recvLine(t, r); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":1,"result":{"protocol":1,"plugin":{"name":"raw"`) {
		t.Fatalf("the declaration: %s", l)
	}
	// The id is the test's own, string or number, sent as written.
	if err := r.Send(ctx, `{"jsonrpc":"2.0","id":"x 1","method":"host.status","params":{}}`); err != nil {
		t.Fatal(err)
	}
	if l := recvLine(t, r); l != "this is not json" {
		t.Fatalf("got %q, want the crafted line as is", l)
	}
	if err := r.Send(ctx, `{"jsonrpc":"2.0","id":7,"method":"host.status","params":{}}`); err != nil {
		t.Fatal(err)
	}
	if l := recvLine(t, r); l != strings.ReplaceAll(okExec, "{id}", "7") {
		t.Fatalf("got %s", l)
	}
	out := h.tr.Lines(Out)
	if len(out) != 3 || out[1] != `{"jsonrpc":"2.0","id":"x 1","method":"host.status","params":{}}` {
		t.Fatalf("the transcript's outbound lines: %q", out)
	}
	rep := r.Stop()
	if !rep.Graceful || !rep.GroupEmpty || !strings.Contains(h.stderr.String(), "shutdown") {
		t.Fatalf("stop: %+v, stderr %q", rep, h.stderr.String())
	}
	// The plugin's answer to the stop's shutdown is a line like any.
	if l := recvLine(t, r); l != `{"jsonrpc":"2.0","id":1,"result":null}` {
		t.Fatalf("after the stop: %s", l)
	}
	if _, err := r.Recv(ctx); err != io.EOF {
		t.Fatalf("Recv after the stop: %v, want io.EOF", err)
	}
	if err := r.Send(ctx, rawInit); !errors.Is(err, ErrStopped) {
		t.Fatalf("Send after the stop: %v", err)
	}
}

// A line over 1 MiB is reported as such, and the lines after it still
// come; lines already read survive the plugin's exit.
func TestRawOversizeAndEOF(t *testing.T) {
	h := newHarness(t, "raw", "raw:overlong")
	r := startRaw(t, h.cfg)
	ctx := context.Background()
	for _, l := range []string{rawInit,
		`{"jsonrpc":"2.0","id":2,"method":"link.exec","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"link.exec","params":{}}`} {
		if err := r.Send(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	recvLine(t, r) // the declaration
	if _, err := r.Recv(ctx); !errors.Is(err, protocol.ErrLineTooLong) {
		t.Fatalf("Recv of the long line: %v", err)
	}
	rep := r.CloseStdin() // stdin EOF alone: the plugin exits by itself
	if !rep.Graceful || strings.Contains(h.stderr.String(), "shutdown") {
		t.Fatalf("CloseStdin: %+v, stderr %q", rep, h.stderr.String())
	}
	if l := recvLine(t, r); l != strings.ReplaceAll(okExec, "{id}", "3") {
		t.Fatalf("the line after the long one: %s", l)
	}
	if _, err := r.Recv(ctx); err != io.EOF {
		t.Fatalf("Recv at the end: %v", err)
	}
}

// Recv gives up when its context ends.
func TestRawRecvContext(t *testing.T) {
	r := startRaw(t, newHarness(t, "raw", "raw:ok").cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := r.Recv(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Recv with nothing sent: %v", err)
	}
}

func localGood() *protocol.Options {
	d := testDecl("good")
	return &protocol.Options{Name: "good", Version: d.Plugin.Version, Instance: d.Instance, Seams: d.Seams, Handlers: goodHandlers()}
}

// A Local plugin is served in this process and driven as any plugin:
// the handshake and its load rules, typed calls, the stop sequence, which
// ends Serve (its return is the exit).
func TestLocalPlugin(t *testing.T) {
	tr := &Record{}
	p, err := Start(context.Background(), Config{Name: "good", Local: localGood(), Transcript: tr.Add})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if p.Pgid() != 0 || p.Declaration().Plugin.Name != "good" {
		t.Fatalf("pgid %d, declaration %+v", p.Pgid(), p.Declaration())
	}
	res, err := p.Exec(context.Background(), tgt, "retry-twice", ".", time.Second)
	if err != nil || res.Stdout != "third time" {
		t.Fatalf("exec: %+v %v", res, err)
	}
	rep := p.Stop()
	if !rep.Graceful || !rep.GroupEmpty || rep.Exit != nil || rep.Killed != 0 {
		t.Fatalf("stop: %+v", rep)
	}
	if out := tr.Containing(Out, `"method":"shutdown"`); len(out) != 1 {
		t.Fatalf("the stop sent %d shutdowns", len(out))
	}
	// A name the plugin does not declare is refused, as for a process.
	var lr *LoadRefusal
	if _, err := Start(context.Background(), Config{Name: "other", Local: localGood()}); !errors.As(err, &lr) || lr.Rule != RuleName {
		t.Fatalf("a Local plugin under another name: %v", err)
	}
}

// A Raw runs a Local plugin too, line by line.
func TestRawLocal(t *testing.T) {
	r := startRaw(t, Config{Name: "good", Local: localGood()})
	ctx := context.Background()
	if err := r.Send(ctx, rawInit); err != nil {
		t.Fatal(err)
	}
	if l := recvLine(t, r); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":1,"result":{"protocol":1,"plugin":{"name":"good"`) {
		t.Fatalf("the declaration: %s", l)
	}
	if err := r.Send(ctx, `{"jsonrpc":"2.0","id":2,"method":"job.status","params":{"deadline":0,"target":{"host":{"name":"h"}}}}`); err != nil {
		t.Fatal(err)
	}
	if l := recvLine(t, r); l != `{"jsonrpc":"2.0","id":2,"result":{"state":"running"}}` {
		t.Fatalf("job.status: %s", l)
	}
	if rep := r.CloseStdin(); !rep.Graceful || rep.Exit != nil {
		t.Fatalf("Serve did not return on stdin EOF: %+v", rep)
	}
}
