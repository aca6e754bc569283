package caller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/mu-org/mu-plugins/protocol"
)

// pendingCall is a request mu wrote and has not seen answered.
type pendingCall struct {
	id     int64
	method string
	// cancelled: mu gave up on it ($/cancel, a stop): its reply, if one
	// still comes, is checked and ignored.
	cancelled bool
	// resolved: done holds its outcome.
	resolved bool
	done     chan outcome // buffered 1
}

type outcome struct {
	result json.RawMessage
	watch  *watchState // for a channel.watch result
	err    error
}

func (c *pendingCall) resolve(o outcome) {
	if c.resolved {
		return
	}
	c.resolved = true
	c.done <- o
}

// watchState is one watch the plugin opened with its reply.
type watchState struct {
	id        string
	notified  bool // its one notification arrived
	cancelled bool // mu sent $/cancel {watchId}, or the plugin stopped
	ch        chan Notification
}

// end closes the watch's channel once.
func (w *watchState) end(n *Notification) {
	if w.cancelled || w.notified {
		return
	}
	if n != nil {
		w.notified = true
		w.ch <- *n
	} else {
		w.cancelled = true
	}
	close(w.ch)
}

// Notification is a watch's one notification.
type Notification struct {
	Method string          // protocol.NotifyWatchSettled or protocol.NotifyWatchRestarted
	Params json.RawMessage // as sent
	// Exactly one is set, by Method.
	Settled   *protocol.WatchSettled
	Restarted *protocol.WatchRestarted
}

// wireState is what the inbound checker needs to judge a line: the pending
// calls and the live watches. Its user holds a lock around check.
type wireState struct {
	pending map[int64]*pendingCall
	watches map[string]*watchState
}

func newWireState() *wireState {
	return &wireState{pending: map[int64]*pendingCall{}, watches: map[string]*watchState{}}
}

// inbound is a line that passed every check.
type inbound struct {
	// A reply: call is its pending call (ignore it when call.cancelled).
	call *pendingCall
	out  outcome
	// A notification: watch is its watch (nil when it crossed a cancel and
	// is ignored).
	isNotification bool
	watch          *watchState
	note           Notification
}

// envelope is a JSON-RPC message's top level, keys exactly as sent.
type envelope struct {
	jsonrpc, id, method, params, result, errObj json.RawMessage
}

// check judges one inbound line (without its newline) against every
// transport rule, and on success updates the state: a reply takes its call
// out of the pending set, a watch reply opens its watch, a notification
// ends its watch. A *Violation breaks the plugin; for a reply to a pending
// call, in.call is set even then, so the call can fail as an invalid reply.
func (s *wireState) check(line []byte) (in inbound, v *Violation) {
	bad := func(rule, format string, args ...any) *Violation {
		return &Violation{Rule: rule, Detail: fmt.Sprintf(format, args...), Excerpt: excerpt(line)}
	}
	if len(line) > protocol.MaxLine {
		return in, bad(VLineTooLong, "a line of %d bytes exceeds 1 MiB", len(line))
	}
	if !utf8.Valid(line) {
		return in, bad(VUTF8, "the line is not valid UTF-8")
	}
	if !json.Valid(line) {
		return in, bad(VNotJSON, "the line is not one JSON value")
	}
	env, v := parseEnvelope(line, bad)
	if v != nil {
		return in, v
	}
	if string(env.jsonrpc) != `"2.0"` {
		return in, bad(VEnvelope, `jsonrpc must be "2.0"`)
	}
	switch {
	case env.method != nil && env.id != nil:
		return in, bad(VRequest, "the plugin sent a request (method %s); it sends none to mu", env.method)
	case env.method != nil:
		in, v = s.checkNotification(env, bad)
	default:
		in, v = s.checkReply(env, bad)
	}
	if v == nil {
		// The whole envelope, against the schema: what the checks above
		// did not already refuse by a more precise rule.
		if err := schemaMessage(line); err != nil {
			return in, bad(VEnvelope, "the message does not match the schema: %v", err)
		}
	}
	return in, v
}

// parseEnvelope reads the top level of a valid JSON value, refusing a
// non-object, an unknown key and a repeated one.
func parseEnvelope(line []byte, bad func(string, string, ...any) *Violation) (envelope, *Violation) {
	var env envelope
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return env, bad(VNotJSON, "%v", err)
	}
	if tok != json.Delim('{') {
		return env, bad(VNotObject, "the message is not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return env, bad(VNotJSON, "%v", err)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return env, bad(VNotJSON, "%v", err)
		}
		var slot *json.RawMessage
		switch key {
		case "jsonrpc":
			slot = &env.jsonrpc
		case "id":
			slot = &env.id
		case "method":
			slot = &env.method
		case "params":
			slot = &env.params
		case "result":
			slot = &env.result
		case "error":
			slot = &env.errObj
		default:
			return env, bad(VUnknownField, "unknown field %q in the message", key)
		}
		if *slot != nil {
			return env, bad(VUnknownField, "field %q appears twice", key)
		}
		*slot = raw
	}
	return env, nil
}

func (s *wireState) checkReply(env envelope, bad func(string, string, ...any) *Violation) (in inbound, v *Violation) {
	if env.params != nil {
		return in, bad(VEnvelope, "a reply carries params")
	}
	if env.id == nil {
		return in, bad(VEnvelope, "a message with neither method nor id")
	}
	id, err := strconv.ParseInt(string(env.id), 10, 64)
	call := s.pending[id]
	if err != nil || call == nil {
		return in, bad(VNoPending, "a reply to id %s, which is no pending call", env.id)
	}
	in.call = call
	delete(s.pending, id)
	switch {
	case env.result != nil && env.errObj != nil:
		return in, bad(VEnvelope, "a reply carries both result and error")
	case env.result == nil && env.errObj == nil:
		return in, bad(VEnvelope, "a reply carries neither result nor error (an absent result is null)")
	case env.errObj != nil:
		re, v := checkErrorObject(call.method, env.errObj, bad)
		if v != nil {
			return in, v
		}
		in.out.err = re
		return in, nil
	}
	// initialize's result is the declaration: the handshake judges it, rule
	// by rule, so a bad one is a load refusal naming its rule.
	if call.method != protocol.MethodInitialize.Name {
		if err := schemaResult(call.method, env.result); err != nil {
			return in, bad(VSchema, "%s result does not match the schema: %v", call.method, err)
		}
	}
	in.out.result = env.result
	if call.method == protocol.MethodChannelWatch.Name {
		var wr struct {
			WatchID string `json:"watchId"`
		}
		if err := json.Unmarshal(env.result, &wr); err != nil || wr.WatchID == "" {
			return in, bad(VSchema, "channel.watch result has no watchId")
		}
		if _, dup := s.watches[wr.WatchID]; dup {
			return in, bad(VSchema, "channel.watch result reuses watchId %q", wr.WatchID)
		}
		w := &watchState{id: wr.WatchID, ch: make(chan Notification, 1)}
		if call.cancelled {
			// The reply crossed mu's $/cancel (or the stop): it is ignored,
			// and so is the notification of the watch it opened, which
			// crosses the same cancel. Nobody waits on the watch.
			w.cancelled = true
			close(w.ch)
		}
		s.watches[wr.WatchID] = w
		in.out.watch = w
	}
	return in, nil
}

func checkErrorObject(method string, raw json.RawMessage, bad func(string, string, ...any) *Violation) (*RemoteError, *Violation) {
	if err := schemaErrorObject(raw); err != nil {
		return nil, bad(VErrorObject, "the error object does not match the schema: %v", err)
	}
	var eo struct {
		Code    *int64          `json:"code"`
		Message *string         `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &eo); err != nil {
		return nil, bad(VErrorObject, "the error is not an object: %v", err)
	}
	if eo.Code == nil || eo.Message == nil {
		return nil, bad(VErrorObject, "the error lacks code or message")
	}
	var d struct {
		Kind   protocol.Kind `json:"kind"`
		Remedy string        `json:"remedy"`
	}
	if len(eo.Data) == 0 || json.Unmarshal(eo.Data, &d) != nil || !d.Kind.Valid() {
		return nil, bad(VErrorObject, "the error has no valid data.kind")
	}
	if d.Kind == protocol.Human && d.Remedy == "" {
		return nil, bad(VErrorObject, "a human error has no data.remedy")
	}
	return &RemoteError{Method: method, Code: *eo.Code, Message: *eo.Message, Kind: d.Kind, Remedy: d.Remedy, Data: eo.Data}, nil
}

func (s *wireState) checkNotification(env envelope, bad func(string, string, ...any) *Violation) (in inbound, v *Violation) {
	if env.result != nil || env.errObj != nil {
		return in, bad(VEnvelope, "a notification carries result or error")
	}
	var method string
	if err := json.Unmarshal(env.method, &method); err != nil {
		return in, bad(VEnvelope, "method is not a string")
	}
	if method != protocol.NotifyWatchSettled && method != protocol.NotifyWatchRestarted {
		return in, bad(VNotification, "notification %q: the plugin's only notifications are watch/settled and watch/restarted", method)
	}
	if env.params == nil {
		return in, bad(VSchema, "%s carries no params", method)
	}
	if err := schemaNotification(method, env.params); err != nil {
		return in, bad(VSchema, "%s params do not match the schema: %v", method, err)
	}
	n := Notification{Method: method, Params: env.params}
	var watchID string
	if method == protocol.NotifyWatchSettled {
		var p protocol.WatchSettled
		if err := strictUnmarshal(env.params, &p); err != nil {
			return in, bad(VSchema, "%s params: %v", method, err)
		}
		n.Settled, watchID = &p, p.WatchID
	} else {
		var p protocol.WatchRestarted
		if err := strictUnmarshal(env.params, &p); err != nil {
			return in, bad(VSchema, "%s params: %v", method, err)
		}
		n.Restarted, watchID = &p, p.WatchID
	}
	in.isNotification = true
	w := s.watches[watchID]
	if w == nil {
		for _, c := range s.pending {
			if c.method == protocol.MethodChannelWatch.Name && !c.cancelled {
				return in, bad(VEarlyNotification, "%s for watch %q before its channel.watch reply", method, watchID)
			}
		}
		return in, bad(VUnknownWatch, "%s for watch %q, which no reply opened", method, watchID)
	}
	if w.cancelled {
		return in, nil // it crossed mu's $/cancel {watchId}: ignored
	}
	if w.notified {
		return in, bad(VSecondNotification, "a second notification (%s) for watch %q", method, watchID)
	}
	in.watch, in.note = w, n
	return in, nil
}

// strictUnmarshal decodes refusing unknown fields (the schema check is the
// authority; this keeps the typed values honest without it).
func strictUnmarshal(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
