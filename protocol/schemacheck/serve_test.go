package schemacheck

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
)

// TestServerOutputValidates drives the project's real plugin side
// (protocol.Serve) with every method's example params, checked first as mu
// would send them, and checks every line it writes: the envelope, then the
// result against the asked method's definition, the error object, or the
// notification.
func TestServerOutputValidates(t *testing.T) {
	deadline := time.Now().Add(time.Hour).UnixMilli()
	handlers := map[string]protocol.Handler{}
	methods := make([]string, 0, len(examples))
	for m := range examples {
		if m == protocol.MethodInitialize.Name || m == protocol.MethodShutdown.Name || m == protocol.MethodCancel.Name {
			continue
		}
		methods = append(methods, m)
	}
	sort.Strings(methods)
	for _, m := range methods {
		res := examples[m].results[0]
		handlers[m] = func(ctx context.Context, c *protocol.Call) (any, error) {
			if m == protocol.MethodChannelWatch.Name {
				c.Watch("w-1", func(ctx context.Context) (string, any) {
					return protocol.NotifyWatchSettled, notificationExamples[protocol.NotifyWatchSettled][0]
				})
			}
			return res, nil
		}
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- protocol.Serve(context.Background(), protocol.Options{Name: "box", Version: "0.1.0", Instance: "prod-eu",
			Seams: fullDecl.Seams, Handlers: handlers, In: inR, Out: outW})
		outW.Close()
	}()
	lines := make(chan string, 16)
	go func() {
		r := bufio.NewReaderSize(outR, 2<<20)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- l
		}
	}()
	send := func(id any, method string, params any) {
		t.Helper()
		env := map[string]any{"jsonrpc": "2.0", "method": method}
		if id != nil {
			env["id"] = id
		}
		if params != nil {
			raw := json.RawMessage(words.JSON(params))
			if _, deliberate := params.(json.RawMessage); !deliberate {
				if _, hasBase := examples[method]; hasBase && method != protocol.MethodInitialize.Name && method != protocol.MethodCancel.Name {
					raw = apply(raw, set("/deadline", deadline))
				}
				if err := Params(method, raw); err != nil {
					t.Fatalf("mu's params for %s: %v", method, err)
				}
			}
			env["params"] = json.RawMessage(raw)
		}
		if _, err := inW.Write(append(json.RawMessage(words.JSON(env)), '\n')); err != nil {
			t.Fatal(err)
		}
	}
	// recv reads one line and checks it in full; it returns its envelope.
	recv := func(method string) map[string]json.RawMessage {
		t.Helper()
		var l string
		select {
		case x, ok := <-lines:
			if !ok {
				t.Fatal("the plugin closed stdout")
			}
			l = x
		case <-time.After(30 * time.Second):
			t.Fatal("no line from the plugin")
		}
		if err := Message([]byte(l)); err != nil {
			t.Fatalf("%s: %v\n%s", method, err, l)
		}
		var env map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &env); err != nil {
			t.Fatal(err)
		}
		switch {
		case env["result"] != nil:
			if err := Result(method, env["result"]); err != nil {
				t.Errorf("%s: %v\n%s", method, err, l)
			}
		case env["error"] != nil:
			if err := ErrorObject(env["error"]); err != nil {
				t.Errorf("%s: %v\n%s", method, err, l)
			}
		default:
			var name string
			_ = json.Unmarshal(env["method"], &name)
			if err := Notification(name, env["params"]); err != nil {
				t.Errorf("%v\n%s", err, l)
			}
		}
		return env
	}

	send(1, protocol.MethodInitialize.Name, examples[protocol.MethodInitialize.Name].params[0])
	if env := recv(protocol.MethodInitialize.Name); env["result"] == nil {
		t.Fatalf("initialize answered %s", env["error"])
	}
	for i, m := range methods {
		for j, p := range examples[m].params {
			id := fmt.Sprintf("%d-%d", i, j)
			send(id, m, p)
			env := recv(m)
			if env["result"] == nil {
				t.Errorf("%s: no result: %s", m, env["error"])
			}
			if m == protocol.MethodChannelWatch.Name {
				if env := recv(m); env["method"] == nil {
					t.Errorf("channel.watch: no notification after the reply")
				}
			}
		}
	}
	// Errors, as the server maps them.
	send(90, "link.teleport", json.RawMessage(`{}`))
	if env := recv("link.teleport"); env["error"] == nil {
		t.Error("an unknown method was not an error")
	}
	send(91, protocol.MethodLinkExec.Name, json.RawMessage(`{"bogus":1}`))
	recv(protocol.MethodLinkExec.Name)
	send(nil, protocol.MethodCancel.Name, protocol.CancelParams{ID: json.RawMessage("99")})
	send(92, protocol.MethodShutdown.Name, nil)
	if env := recv(protocol.MethodShutdown.Name); string(env["result"]) != "null" {
		t.Errorf("shutdown answered %s", env["result"])
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "closed") {
			t.Logf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return")
	}
}
