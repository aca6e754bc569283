package protocol_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
	"github.com/mu-org/mu-plugins/schemas"
)

// session is a plugin served in this process (caller.Config.Local) and
// driven through caller's raw mode: exact lines both ways, in wire order.
type session struct {
	*drive.Raw
}

func testSeams() protocol.Seams {
	return protocol.Seams{Link: &protocol.LinkSeam{Fetch: true, Slots: protocol.SlotsSelf, RemoteOnTimeout: protocol.RemoteStopped,
		Quiescence: protocol.QuiescenceProvable, MaxScriptBytes: 1024, Checks: []string{protocol.PhaseReach}}}
}

func serve(t *testing.T, handlers map[string]protocol.Handler, mod ...func(*protocol.Options)) *session {
	t.Helper()
	opts := protocol.Options{Name: "t", Version: "1.0", Instance: "i", Seams: testSeams(), Handlers: handlers}
	for _, m := range mod {
		m(&opts)
	}
	// A stop waits for Serve to return: it does within its 5 s of stdin
	// EOF, however stuck a handler is (TestEOFReturnsDespiteStuckHandler).
	return &session{drive.StartRaw(t, caller.Config{Name: "t", Local: &opts, StopGrace: protocol.Grace + 5*time.Second})}
}

// base is what every call's params carry (see readBase).
const base = `"deadline":0,"target":{"host":{"name":"h"}}`

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":{"min":1,"max":1},"mu":"5"}}`

func (s *session) init() {
	s.Send(initLine)
	want := `{"jsonrpc":"2.0","id":1,"result":{"protocol":1,"plugin":{"name":"t","version":"1.0"},"instance":"i","schema":"` + schemas.V1Digest() +
		`","seams":{"link":{"fetch":true,"slots":"self","remoteOnTimeout":"stopped","quiescence":"provable","maxScriptBytes":1024,"checks":["reach"]}}}}`
	s.Expect(want)
}

func nilHandler(context.Context, *protocol.Call) (any, error) { return nil, nil }

func TestHandshakeExact(t *testing.T) {
	s := serve(t, nil)
	s.init()
}

func TestHandshakeRefusesProtocolRange(t *testing.T) {
	s := serve(t, nil)
	s.Send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":{"min":2,"max":3},"mu":"5"}}`)
	s.Expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"initialize: mu offers protocol 2..3; this plugin speaks 1","data":{"kind":"permanent"}}}`)
}

func TestCallBeforeInitializeRefused(t *testing.T) {
	s := serve(t, map[string]protocol.Handler{protocol.MethodLinkExec.Name: nilHandler})
	s.Send(`{"jsonrpc":"2.0","id":2,"method":"link.exec","params":{"deadline":0,"target":{"host":{"name":"h"}},"script":"","cwd":".","timeoutMs":1}}`)
	s.Expect(`{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"link.exec before initialize","data":{"kind":"permanent"}}}`)
}

// A handler returning nil gives "result": null: a reply always carries result.
func TestNilResultIsNull(t *testing.T) {
	s := serve(t, map[string]protocol.Handler{protocol.MethodHostRelease.Name: nilHandler})
	s.init()
	s.Send(`{"jsonrpc":"2.0","id":"r1","method":"host.release","params":{"deadline":0,"target":{"host":{"name":"h"}},"key":"k"}}`)
	s.Expect(`{"jsonrpc":"2.0","id":"r1","result":null}`)
}

func TestUnknownMethodTyped(t *testing.T) {
	s := serve(t, nil)
	s.init()
	s.Send(`{"jsonrpc":"2.0","id":3,"method":"link.teleport","params":{}}`)
	s.Expect(`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"method not found: link.teleport","data":{"kind":"permanent"}}}`)
}

// Every error kind is mapped in one place, remedy included for human; a
// plain Go error from an effect is an unknown outcome, from a read permanent.
func TestErrorMapping(t *testing.T) {
	s := serve(t, map[string]protocol.Handler{
		protocol.MethodLinkExec.Name: func(context.Context, *protocol.Call) (any, error) {
			return nil, protocol.HumanError("run ssh-add", "key locked")
		},
		protocol.MethodLinkFetch.Name: func(context.Context, *protocol.Call) (any, error) {
			return nil, protocol.Errorf(protocol.Retryable, "busy")
		},
		protocol.MethodHostAcquire.Name: func(context.Context, *protocol.Call) (any, error) { return nil, io.ErrUnexpectedEOF },
		protocol.MethodHostStatus.Name:  func(context.Context, *protocol.Call) (any, error) { return nil, io.ErrUnexpectedEOF },
	})
	s.init()
	s.Send(`{"jsonrpc":"2.0","id":1,"method":"link.exec","params":{` + base + `}}`)
	s.Expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"key locked","data":{"kind":"human","remedy":"run ssh-add"}}}`)
	s.Send(`{"jsonrpc":"2.0","id":2,"method":"link.fetch","params":{` + base + `}}`)
	s.Expect(`{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"busy","data":{"kind":"retryable"}}}`)
	s.Send(`{"jsonrpc":"2.0","id":3,"method":"host.acquire","params":{` + base + `}}`)
	s.Expect(`{"jsonrpc":"2.0","id":3,"error":{"code":-32004,"message":"unexpected EOF","data":{"kind":"unknown-outcome"}}}`)
	s.Send(`{"jsonrpc":"2.0","id":4,"method":"host.status","params":{` + base + `}}`)
	s.Expect(`{"jsonrpc":"2.0","id":4,"error":{"code":-32002,"message":"unexpected EOF","data":{"kind":"permanent"}}}`)
}

func TestMalformedInputAnswered(t *testing.T) {
	s := serve(t, nil)
	s.init()
	s.Send(`not json`)
	s.Expect(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"invalid request value","data":{"kind":"permanent"}}}`)
	s.Send("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\",\"params\":{\"s\":\"\xff\"}}")
	s.Expect(`{"jsonrpc":"2.0","id":5,"error":{"code":-32002,"message":"message is not valid UTF-8","data":{"kind":"permanent"}}}`)
	s.Send(`{"jsonrpc":"2.0","id":6,"method":"x","params":{"s":"` + strings.Repeat("a", protocol.MaxLine) + `"}}`)
	s.Expect(`{"jsonrpc":"2.0","id":null,"error":{"code":-32002,"message":"message exceeds 1 MiB","data":{"kind":"permanent"}}}`)
	// The plugin still serves after each.
	s.Send(`{"jsonrpc":"2.0","id":7,"method":"nope"}`)
	s.Expect(`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"method not found: nope","data":{"kind":"permanent"}}}`)
}

// Strict params: an unknown field is a permanent invalid-params error.
func TestStrictDecode(t *testing.T) {
	s := serve(t, map[string]protocol.Handler{protocol.MethodLinkExec.Name: func(ctx context.Context, c *protocol.Call) (any, error) {
		var p protocol.ExecParams
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		return protocol.ExecResult{ExitCode: new(int)}, nil
	}})
	s.init()
	s.Send(`{"jsonrpc":"2.0","id":2,"method":"link.exec","params":{"deadline":0,"target":{"host":{"name":"h"}},"script":"","cwd":".","timeoutMs":1,"extra":1}}`)
	s.Expect(`{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"link.exec: invalid params: json: unknown field \"extra\"","data":{"kind":"permanent"}}}`)
	s.Send(`{"jsonrpc":"2.0","id":3,"method":"link.exec","params":{"deadline":0,"target":{"host":{"name":"h"}},"script":"","cwd":".","timeoutMs":1}}`)
	s.Expect(`{"jsonrpc":"2.0","id":3,"result":{"exitCode":0,"stdout":"","stderr":"","partial":false}}`)
}

// A reply over 1 MiB is replaced by an error for the same id, of kind
// unknown-outcome for an effect or a run (it ran; its answer is lost),
// permanent for a read: jrpc2 would otherwise drop it silently.
func TestOversizeReplyReplaced(t *testing.T) {
	big := strings.Repeat("x", protocol.MaxLine)
	s := serve(t, map[string]protocol.Handler{
		protocol.MethodLinkExec.Name: func(context.Context, *protocol.Call) (any, error) { return protocol.ExecResult{Stdout: big}, nil },
		protocol.MethodJobStart.Name: func(context.Context, *protocol.Call) (any, error) {
			return protocol.JobStartResult{View: protocol.View{Command: big}}, nil
		},
		protocol.MethodJobAttach.Name: func(context.Context, *protocol.Call) (any, error) { return protocol.View{Command: big}, nil },
	})
	s.init()
	s.Send(`{"jsonrpc":"2.0","id":2,"method":"link.exec","params":{` + base + `}}`)
	s.Expect(`{"jsonrpc":"2.0","id":2,"error":{"code":-32004,"message":"reply exceeds 1 MiB","data":{"kind":"unknown-outcome"}}}`)
	s.Send(`{"jsonrpc":"2.0","id":3,"method":"job.start","params":{` + base + `}}`)
	s.Expect(`{"jsonrpc":"2.0","id":3,"error":{"code":-32004,"message":"reply exceeds 1 MiB","data":{"kind":"unknown-outcome"}}}`)
	s.Send(`{"jsonrpc":"2.0","id":4,"method":"job.attach","params":{` + base + `}}`)
	s.Expect(`{"jsonrpc":"2.0","id":4,"error":{"code":-32002,"message":"reply exceeds 1 MiB","data":{"kind":"permanent"}}}`)
}

// $/cancel {id} ends the call's context; the call answers, the plugin
// lives. A run cut after its handler began is unknown-outcome, whatever
// kind its backend chose (the cut-run rule).
func TestCancelByID(t *testing.T) {
	started := make(chan struct{})
	s := serve(t, map[string]protocol.Handler{protocol.MethodLinkExec.Name: func(ctx context.Context, c *protocol.Call) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, protocol.Errorf(protocol.Retryable, "cancelled")
	}})
	s.init()
	s.Send(`{"jsonrpc":"2.0","id":"abc","method":"link.exec","params":{` + base + `}}`)
	<-started
	s.Send(`{"jsonrpc":"2.0","method":"$/cancel","params":{"id":"abc"}}`)
	s.Expect(`{"jsonrpc":"2.0","id":"abc","error":{"code":-32004,"message":"cancelled","data":{"kind":"unknown-outcome"}}}`)
}

// A call whose deadline passed before it began runs nothing and says so:
// retryable, even for a run (the server can show it never started).
func TestDeadlineEndsCall(t *testing.T) {
	ran := make(chan struct{}, 1)
	s := serve(t, map[string]protocol.Handler{protocol.MethodLinkExec.Name: func(ctx context.Context, c *protocol.Call) (any, error) {
		ran <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	s.init()
	past := time.Now().Add(-time.Second).UnixMilli()
	s.Send(`{"jsonrpc":"2.0","id":9,"method":"link.exec","params":{"deadline":` + itoa(past) + `,"target":{"host":{"name":"h"}}}}`)
	s.Expect(`{"jsonrpc":"2.0","id":9,"error":{"code":-32001,"message":"link.exec: the call ended before it began; nothing was run: context deadline exceeded","data":{"kind":"retryable"}}}`)
	select {
	case <-ran:
		t.Fatal("the handler ran past its deadline")
	default:
	}
}

// A watch's notification goes out after its reply, exactly once, and not at
// all once $/cancel {watchId} ended it.
func TestWatchOrderAndCancel(t *testing.T) {
	release := make(chan struct{})
	s := serve(t, map[string]protocol.Handler{protocol.MethodChannelWatch.Name: func(ctx context.Context, c *protocol.Call) (any, error) {
		var p struct {
			protocol.Base
			Inc string `json:"inc"`
		}
		_ = json.Unmarshal(c.Params, &p)
		id := "w-" + p.Inc
		c.Watch(id, func(ctx context.Context) (string, any) {
			if p.Inc == "now" {
				return protocol.NotifyWatchSettled, protocol.WatchSettled{WatchID: id, Observation: protocol.Observation{Status: protocol.TurnIdle, Settled: true, Runs: 1, Incarnation: "a"}}
			}
			select {
			case <-release:
				return protocol.NotifyWatchSettled, protocol.WatchSettled{WatchID: id}
			case <-ctx.Done():
				return "", nil
			}
		})
		return protocol.WatchResult{WatchID: id, Initial: protocol.Observation{Status: protocol.TurnBusy, Incarnation: "a"}}, nil
	}})
	s.init()
	for i := 0; i < 50; i++ {
		s.Send(`{"jsonrpc":"2.0","id":` + itoa(int64(10+i)) + `,"method":"channel.watch","params":{` + base + `,"inc":"now"}}`)
		s.Expect(`{"jsonrpc":"2.0","id":` + itoa(int64(10+i)) + `,"result":{"watchId":"w-now","initial":{"status":"busy","settled":false,"since":0,"runs":0,"incarnation":"a"}}}`)
		s.Expect(`{"jsonrpc":"2.0","method":"watch/settled","params":{"watchId":"w-now","observation":{"status":"idle","settled":true,"since":0,"runs":1,"incarnation":"a"}}}`)
	}
	s.Send(`{"jsonrpc":"2.0","id":2,"method":"channel.watch","params":{` + base + `,"inc":"later"}}`)
	s.Expect(`{"jsonrpc":"2.0","id":2,"result":{"watchId":"w-later","initial":{"status":"busy","settled":false,"since":0,"runs":0,"incarnation":"a"}}}`)
	s.Send(`{"jsonrpc":"2.0","method":"$/cancel","params":{"watchId":"w-later"}}`)
	time.Sleep(50 * time.Millisecond) // let the cancel land before the release: order, not timing, is asserted below
	close(release)
	s.Send(`{"jsonrpc":"2.0","id":3,"method":"nope"}`)
	s.Expect(`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"method not found: nope","data":{"kind":"permanent"}}}`)
}

// shutdown is answered with null; then Serve returns after its calls end.
func TestShutdownAnsweredThenExit(t *testing.T) {
	var once sync.Once
	stopped := make(chan struct{})
	s := serve(t, nil, func(o *protocol.Options) { o.Stop = func(context.Context) { once.Do(func() { close(stopped) }) } })
	s.init()
	s.Send(`{"jsonrpc":"2.0","id":4,"method":"shutdown"}`)
	s.Expect(`{"jsonrpc":"2.0","id":4,"result":null}`)
	select {
	case <-s.Done(): // Serve's return is the plugin's exit, which stops it
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after shutdown")
	}
	select {
	case <-stopped:
	default:
		t.Fatal("Stop hook did not run")
	}
}

// A backend that ignores its context does not hold the plugin past EOF.
func TestEOFReturnsDespiteStuckHandler(t *testing.T) {
	started := make(chan struct{})
	s := serve(t, map[string]protocol.Handler{protocol.MethodLinkExec.Name: func(ctx context.Context, c *protocol.Call) (any, error) {
		close(started)
		select {} // never returns
	}})
	s.init()
	s.Send(`{"jsonrpc":"2.0","id":2,"method":"link.exec","params":{` + base + `}}`)
	<-started
	// CloseStdin waits for Serve to return, at most the session's stop
	// grace (protocol.Grace + 5 s).
	if rep := s.CloseStdin(); !rep.GroupEmpty {
		t.Fatal("Serve did not return after stdin EOF")
	}
}

// A declaration that breaks a load rule is refused before serving.
func TestServeRefusesBadDeclaration(t *testing.T) {
	err := protocol.Serve(context.Background(), protocol.Options{Name: "t", Version: "1", Instance: "i",
		Seams: protocol.Seams{Host: &protocol.HostSeam{}}, In: strings.NewReader(""), Out: nopWC{io.Discard}})
	if err == nil || !strings.Contains(err.Error(), protocol.RuleHostNeedsLink) {
		t.Fatalf("got %v", err)
	}
}

type nopWC struct{ io.Writer }

func (nopWC) Close() error { return nil }

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A request followed at once by stdin EOF is still answered when it is
// quick ("cancel or finish its in-flight calls").
func TestEOFDrainsQuickReplies(t *testing.T) {
	s := serve(t, map[string]protocol.Handler{protocol.MethodHostRelease.Name: nilHandler})
	s.init()
	s.Send(`{"jsonrpc":"2.0","id":2,"method":"host.release","params":{` + base + `}}`)
	s.CloseStdin() // the lines read before Serve returned stay to be received
	s.Expect(`{"jsonrpc":"2.0","id":2,"result":null}`)
}

// A JSON array on a line (a JSON-RPC batch) is not one message: it is
// refused as an invalid request with id null, never answered with an array,
// and none of its elements runs.
func TestBatchRefused(t *testing.T) {
	var ran atomic.Int64
	s := serve(t, map[string]protocol.Handler{protocol.MethodHostRelease.Name: func(context.Context, *protocol.Call) (any, error) { ran.Add(1); return nil, nil }})
	s.init()
	one := `{"jsonrpc":"2.0","id":2,"method":"host.release","params":{` + base + `,"key":"k"}}`
	const refused = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a JSON array (a batch) is not one message: send one request per line","data":{"kind":"permanent"}}}`
	for _, line := range []string{"[" + one + "]", " \t[" + one + "," + one + "]", "[]", `[{"jsonrpc":"2.0","method":"shutdown"}]`} {
		s.Send(line)
		s.Expect(refused)
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("an element of a batch ran %d time(s)", n)
	}
	s.Send(one) // the plugin still serves, and the notification in a batch did not stop it
	s.Expect(`{"jsonrpc":"2.0","id":2,"result":null}`)
}

// shutdown sent as a notification stops the plugin as the request does:
// the Stop hook runs and Serve returns, with no reply and no stdin EOF.
func TestShutdownNotificationStops(t *testing.T) {
	var once sync.Once
	stopped := make(chan struct{})
	s := serve(t, nil, func(o *protocol.Options) { o.Stop = func(context.Context) { once.Do(func() { close(stopped) }) } })
	s.init()
	s.Send(`{"jsonrpc":"2.0","method":"shutdown"}`)
	select {
	case <-s.Done(): // Serve's return is the plugin's exit, which stops it
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after a shutdown notification")
	}
	select {
	case <-stopped:
	default:
		t.Fatal("Stop hook did not run")
	}
	if l, err := s.Raw.Raw.Recv(context.Background()); err != io.EOF {
		t.Fatalf("a shutdown notification was answered: %s (%v)", l, err)
	}
}

// A request that arrives after shutdown (request or notification) runs
// nothing: it is refused as retryable (nothing happened; a fresh plugin
// would serve it).
func TestRequestAfterShutdownRefused(t *testing.T) {
	for _, shutdown := range []string{`{"jsonrpc":"2.0","id":3,"method":"shutdown"}`, `{"jsonrpc":"2.0","method":"shutdown"}`} {
		t.Run(shutdown, func(t *testing.T) {
			var ran atomic.Int64
			// The Stop hook holds the stop (and so stdout) open until the
			// refusal was read: a plugin refuses what it reads while it stops.
			gate := make(chan struct{})
			s := serve(t, map[string]protocol.Handler{protocol.MethodHostRelease.Name: func(context.Context, *protocol.Call) (any, error) { ran.Add(1); return nil, nil }},
				func(o *protocol.Options) {
					o.Stop = func(ctx context.Context) {
						select {
						case <-gate:
						case <-ctx.Done():
						}
					}
				})
			s.init()
			// One write: the request is read right behind shutdown.
			s.Send(shutdown + "\n" + `{"jsonrpc":"2.0","id":4,"method":"host.release","params":{` + base + `,"key":"k"}}`)
			want := map[string]bool{
				`{"jsonrpc":"2.0","id":4,"error":{"code":-32001,"message":"the plugin is shutting down: host.release came after shutdown and was not run","data":{"kind":"retryable"}}}`: true,
			}
			if strings.Contains(shutdown, `"id"`) {
				want[`{"jsonrpc":"2.0","id":3,"result":null}`] = true
			}
			for len(want) > 0 {
				got := s.Recv()
				if !want[got] {
					t.Fatalf("unexpected line %s", got)
				}
				delete(want, got)
			}
			close(gate)
			if n := ran.Load(); n != 0 {
				t.Fatalf("a request after shutdown ran")
			}
		})
	}
}
