package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// Call makes one call the way mu makes it: registration checks, the
// handshake with every load rule, then method with params (a JSON object;
// target is filled in from opts.Host when absent, deadline always), then
// mu's stop sequence. It prints the wire transcript to stdout as it goes
// ("->" to the plugin, "<-" from it) and returns the exit code: 0 for a
// result, 1 otherwise. A channel.watch waits for its notification.
func Call(ctx context.Context, opts Options, method, params string, stdout, stderr io.Writer) int {
	if opts.Name == "" {
		opts.Name = strings.TrimPrefix(filepath.Base(opts.Argv[0]), "mu-plugin-")
	}
	if opts.Host == "" {
		opts.Host = "contract"
	}
	var m map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(params))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil {
		fmt.Fprintf(stderr, "call: params must be a JSON object: %v\n", err)
		return 2
	}
	if _, ok := m["target"]; !ok && method != protocol.MethodShutdown.Name {
		m["target"], _ = json.Marshal(protocol.Target{Host: protocol.HostRef{Name: opts.Host}})
	}
	raw, _ := json.Marshal(m)

	var mu sync.Mutex
	cfg := caller.Config{
		Name: opts.Name, Argv: opts.Argv, Env: opts.Env, Stderr: stderr,
		Transcript: func(e caller.Event) {
			mu.Lock()
			defer mu.Unlock()
			arrow := "->"
			if e.Dir == caller.In {
				arrow = "<-"
			}
			line := string(bytes.ToValidUTF8(e.Line, []byte("\uFFFD")))
			if e.Oversize {
				line = "<a line over 1 MiB>"
			}
			if e.Note != "" {
				line += " (" + e.Note + ")"
			}
			fmt.Fprintf(stdout, "%s %s\n", arrow, line)
		},
	}
	p, err := caller.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "call: %v\n", err)
		return 1
	}
	defer p.Stop()
	if method == protocol.MethodChannelWatch.Name {
		var wp protocol.WatchParams
		if err := json.Unmarshal(raw, &wp); err != nil {
			fmt.Fprintf(stderr, "call: channel.watch params: %v\n", err)
			return 2
		}
		w, err := p.Watch(ctx, wp, 0)
		if err != nil {
			fmt.Fprintf(stderr, "call: %v\n", err)
			return 1
		}
		wctx, cancel := context.WithTimeout(ctx, opts.timeoutOr(settleBudget))
		defer cancel()
		if _, err := w.Wait(wctx); err != nil {
			w.Cancel()
			fmt.Fprintf(stderr, "call: the watch ended without its notification: %v\n", err)
			return 1
		}
		return 0
	}
	if _, err := p.Call(ctx, method, json.RawMessage(raw), 0); err != nil {
		fmt.Fprintf(stderr, "call: %v\n", err)
		return 1
	}
	return 0
}

func (o Options) timeoutOr(d time.Duration) time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return d
}
