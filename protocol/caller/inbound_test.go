package caller

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mu-org/mu-plugins/protocol"
)

// state gives a wire state with exec call 2, watch call 3 pending, and
// open watch "w0", as the in-memory tests and the fuzz target use it.
func state() *wireState {
	s := newWireState()
	for id, m := range map[int64]string{2: protocol.MethodLinkExec.Name, 3: protocol.MethodChannelWatch.Name, 4: protocol.MethodJobStop.Name} {
		s.pending[id] = &pendingCall{id: id, method: m, done: make(chan outcome, 1)}
	}
	s.watches["w0"] = &watchState{id: "w0", ch: make(chan Notification, 1)}
	return s
}

const settledW0 = `{"jsonrpc":"2.0","method":"watch/settled","params":{"watchId":"w0","observation":` + obsJSON + `}}`

func TestInboundLines(t *testing.T) {
	for _, c := range []struct {
		line string
		rule string // "" accepted
	}{
		{`{"jsonrpc":"2.0","id":2,"result":{"exitCode":null,"stdout":"","stderr":"","partial":true}}`, ""},
		{`{"id":2,"jsonrpc":"2.0","result":{"exitCode":1,"stdout":"","stderr":"","partial":false}}`, ""},
		{`{"jsonrpc":"2.0","id":4,"result":null}`, ""},
		{`{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"busy","data":{"kind":"retryable"}}}`, ""},
		{`{"jsonrpc":"2.0","id":3,"result":{"watchId":"w9","initial":` + obsJSON + `}}`, ""},
		{settledW0, ""},
		{`{"jsonrpc":"2.0","method":"watch/restarted","params":{"watchId":"w0","incarnation":"s2"}}`, ""},
		{`{"jsonrpc":"2.0","id":4}`, VEnvelope},
		{`{"jsonrpc":"2.0","id":2,"result":null}`, VSchema},
		{`{"jsonrpc":"2.0","id":4,"result":null,"x":1}`, VUnknownField},
		{`{"jsonrpc":"2.0","ID":4,"result":null}`, VUnknownField},
		{`{"jsonrpc":"2.0","id":5,"result":null}`, VNoPending},
		{`{"jsonrpc":"2.0","id":"4","result":null}`, VNoPending},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse","data":{"kind":"permanent"}}}`, VNoPending},
		{`{"jsonrpc":"2.0","id":4,"error":{"code":-32003,"message":"x","data":{"kind":"human"}}}`, VErrorObject},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, VRequest},
		{`{"jsonrpc":"2.0","method":"log","params":{}}`, VNotification},
		{`{"jsonrpc":"2.0","method":"watch/settled","params":{"watchId":"w0"}}`, VSchema},
		{`{"jsonrpc":"2.0","method":"watch/settled","params":{"watchId":"zz","observation":` + obsJSON + `}}`, VEarlyNotification},
		{"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":\"\xc3\x28\"}", VUTF8},
		{`{"jsonrpc":"2.0","id":4,"result":null}x`, VNotJSON},
		{``, VNotJSON},
		{` `, VNotJSON},
		{`null`, VNotObject},
		{strings.Repeat(" ", protocol.MaxLine+1), VLineTooLong},
	} {
		in, v := state().check([]byte(c.line))
		got := ""
		if v != nil {
			got = v.Rule
		}
		if got != c.rule {
			t.Errorf("%.80s: rule %q (%v), want %q", c.line, got, v, c.rule)
		}
		if v == nil && in.call == nil && !in.isNotification {
			t.Errorf("%.80s: accepted as nothing", c.line)
		}
	}
}

// TestInboundWatchLifecycle: a notification before its reply, one after,
// a second one, and one after mu's cancel.
func TestInboundWatchLifecycle(t *testing.T) {
	s := state()
	reply := `{"jsonrpc":"2.0","id":3,"result":{"watchId":"w9","initial":` + obsJSON + `}}`
	note := strings.ReplaceAll(settledW0, "w0", "w9")
	if _, v := s.check([]byte(note)); v == nil || v.Rule != VEarlyNotification {
		t.Fatalf("before the reply: %v", v)
	}
	s = state()
	in, v := s.check([]byte(reply))
	if v != nil || in.out.watch == nil {
		t.Fatalf("reply: %v", v)
	}
	in, v = s.check([]byte(note))
	if v != nil || in.watch == nil {
		t.Fatalf("notification: %v", v)
	}
	in.watch.end(&in.note)
	if _, v = s.check([]byte(note)); v == nil || v.Rule != VSecondNotification {
		t.Fatalf("second: %v", v)
	}
	s.watches["w0"].end(nil) // mu cancelled w0
	if in, v = s.check([]byte(settledW0)); v != nil || in.watch != nil {
		t.Fatalf("crossing a cancel: %v %+v", v, in)
	}
	// With no watch call pending, an unknown watch is just unknown.
	delete(s.pending, 3)
	if _, v = s.check([]byte(strings.ReplaceAll(settledW0, "w0", "zz"))); v == nil || v.Rule != VUnknownWatch {
		t.Fatalf("unknown: %v", v)
	}
}

// TestInboundReplyToCancelledIgnored: a late reply to a call mu gave up on
// is checked and does not break anything.
func TestInboundReplyToCancelledIgnored(t *testing.T) {
	s := state()
	s.pending[4].cancelled = true
	in, v := s.check([]byte(`{"jsonrpc":"2.0","id":4,"result":null}`))
	if v != nil || in.call == nil || !in.call.cancelled {
		t.Fatalf("%v %+v", v, in)
	}
	if _, ok := s.pending[4]; ok {
		t.Fatal("still pending")
	}
	if _, v := s.check([]byte(`{"jsonrpc":"2.0","id":4,"result":null}`)); v == nil || v.Rule != VNoPending {
		t.Fatalf("a second reply: %v", v)
	}
}

// TestInboundWatchReplyCrossingCancel: a channel.watch reply that arrives
// after mu's $/cancel, then that watch's notification, are both ignored
// (spec: "a reply that arrives meanwhile is ignored", "a notification that
// crosses the cancel is ignored"). A second reply to the same id, and a
// reply to an id never sent, are still violations.
func TestInboundWatchReplyCrossingCancel(t *testing.T) {
	s := state()
	s.pending[3].cancelled = true
	reply := `{"jsonrpc":"2.0","id":3,"result":{"watchId":"w9","initial":` + obsJSON + `}}`
	in, v := s.check([]byte(reply))
	if v != nil || in.call == nil || !in.call.cancelled {
		t.Fatalf("the crossing reply: %v %+v", v, in)
	}
	note := strings.ReplaceAll(settledW0, "w0", "w9")
	for i := 0; i < 2; i++ {
		if in, v = s.check([]byte(note)); v != nil || !in.isNotification || in.watch != nil {
			t.Fatalf("its notification (%d): %v %+v", i, v, in)
		}
	}
	if _, v = s.check([]byte(reply)); v == nil || v.Rule != VNoPending {
		t.Fatalf("a second reply: %v", v)
	}
	if _, v = state().check([]byte(strings.ReplaceAll(reply, `"id":3`, `"id":77`))); v == nil || v.Rule != VNoPending {
		t.Fatalf("a reply to an id never sent: %v", v)
	}
}

func TestViolationErrors(t *testing.T) {
	v := &Violation{Rule: VNotJSON}
	e := &InvalidReplyError{Method: "m", Violation: v}
	if !errors.Is(e, ErrInvalidReply) || !errors.Is(e, ErrBroken) || errors.Is(e, ErrUnanswered) {
		t.Fatal("error matching")
	}
	if x := excerpt([]byte(strings.Repeat("\xff", 300))); len(x) > 3*120 || !utf8.ValidString(x) {
		t.Fatalf("excerpt %q", x)
	}
}

// FuzzReadInbound: the inbound checker never panics, and whatever it
// accepts is one UTF-8 JSON object of at most 1 MiB that is a reply to a
// pending call or a notification for an open watch.
func FuzzReadInbound(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":2,"result":{"exitCode":0,"stdout":"","stderr":"","partial":false}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"watchId":"w9","initial":` + obsJSON + `}}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32003,"message":"x","data":{"kind":"human","remedy":"r"}}}`,
		settledW0,
		`{"jsonrpc":"2.0","id":1,"method":"x"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":\"\xff\"}",
		`[]`, `{}`, ``, `{"jsonrpc":"2.0","id":4,"result":null,"result":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		s := state()
		in, v := s.check(line)
		if v != nil {
			if v.Rule == "" || !utf8.ValidString(v.Excerpt) {
				t.Fatalf("violation %+v", v)
			}
			return
		}
		if len(line) > protocol.MaxLine || !utf8.Valid(line) || !json.Valid(line) {
			t.Fatalf("accepted an invalid line %q", line)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("accepted a non-object %q", line)
		}
		switch {
		case in.call != nil:
			if _, still := s.pending[in.call.id]; still {
				t.Fatal("a replied call is still pending")
			}
		case in.isNotification:
			if in.watch == nil || in.watch.id != "w0" {
				t.Fatalf("a notification for no open watch: %q", line)
			}
		default:
			t.Fatalf("accepted as nothing: %q", line)
		}
	})
}

// FuzzRequestParams: any params object renders, at every deadline, as the
// same bytes but the deadline's value, and stays valid JSON.
func FuzzRequestParams(f *testing.F) {
	for _, s := range []string{`{}`, `{"deadline":5,"a":1}`, `{"a":{"deadline":1},"b":"x"}`, ` { "z" : [1, 2] , "deadline" : 0 } `} {
		f.Add([]byte(s), int64(1767225600000))
	}
	f.Fuzz(func(t *testing.T, params []byte, dl int64) {
		r, err := NewRequest("link.exec", json.RawMessage(params))
		if err != nil {
			return
		}
		a, b := r.Params(dl), r.Params(dl+1)
		if !json.Valid(a) || !json.Valid(b) {
			t.Fatalf("invalid params %s", a)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(a, &m); err != nil {
			t.Fatal(err)
		}
		var got int64
		if err := json.Unmarshal(m["deadline"], &got); err != nil || got != dl {
			t.Fatalf("deadline %s in %s, want %d", m["deadline"], a, dl)
		}
	})
}

func TestRequestSplit(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{}`, `{"deadline":42}`},
		{`{"a":1}`, `{"deadline":42,"a":1}`},
		{`{"deadline":0,"target":{"host":{"name":"b"}}}`, `{"deadline":42,"target":{"host":{"name":"b"}}}`},
		{`{"a":{"deadline":9}, "deadline" : 7 ,"z":[1]}`, `{"a":{"deadline":9},"deadline":42,"z":[1]}`},
	} {
		r, err := NewRequest("job.status", json.RawMessage(c.in))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(r.Params(42)); got != c.want {
			t.Errorf("%s: got %s want %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{`[]`, `1`, `null`, `{`} {
		if _, err := NewRequest("job.status", json.RawMessage(bad)); err == nil {
			t.Errorf("%s accepted as params", bad)
		}
	}
}
