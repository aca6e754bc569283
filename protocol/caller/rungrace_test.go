package caller

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// A timed-out run of a "stopping" link is held one grace before the caller
// returns it (spec, The link: "mu then waits the grace out, still holding
// the call's channel, before it returns the timed-out run"); a finished
// run, and any run of a "stopped" link, is returned at once. The wait is
// seen through the caller's hook, not timed.
func TestTimedOutRunOfAStoppingLinkWaitsTheGrace(t *testing.T) {
	for _, mode := range []string{protocol.RemoteStopping, protocol.RemoteStopped} {
		t.Run(mode, func(t *testing.T) {
			d := testDecl("good")
			d.Seams.Link.RemoteOnTimeout = mode
			h := map[string]protocol.Handler{protocol.MethodLinkExec.Name: func(ctx context.Context, call *protocol.Call) (any, error) {
				var p protocol.ExecParams
				if err := call.Decode(&p); err != nil {
					return nil, err
				}
				if p.Script == "timeout" {
					return protocol.ExecResult{}, nil // exitCode null: timed out
				}
				return protocol.ExecResult{ExitCode: new(int)}, nil
			}}
			var mu sync.Mutex
			var waits []time.Duration
			cfg := Config{Name: "good", RunGrace: 1234 * time.Millisecond,
				Local: &protocol.Options{Name: "good", Version: d.Plugin.Version, Instance: d.Instance, Seams: d.Seams, Handlers: h}}
			cfg.waitGrace = func(_ context.Context, d time.Duration) {
				mu.Lock()
				waits = append(waits, d)
				mu.Unlock()
			}
			p, err := Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			for _, script := range []string{"ok", "timeout"} {
				res, err := p.Call(context.Background(), protocol.MethodLinkExec.Name, protocol.ExecParams{
					Base: protocol.Base{Target: protocol.Target{Host: protocol.HostRef{Name: "box"}}}, Script: script, Cwd: ".", TimeoutMs: 1000}, 0)
				if err != nil {
					t.Fatal(err)
				}
				var r protocol.ExecResult
				if err := json.Unmarshal(res, &r); err != nil || (script == "ok") != (r.ExitCode != nil) {
					t.Fatalf("%s: %s %v", script, res, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			want := 0
			if mode == protocol.RemoteStopping {
				want = 1
			}
			if len(waits) != want || (want == 1 && waits[0] != 1234*time.Millisecond) {
				t.Fatalf("remoteOnTimeout %q: waits %v, want %d of 1.234s (the timed-out run only)", mode, waits, want)
			}
		})
	}
}
