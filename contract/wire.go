package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// wireChecks are the transport rules a check provokes itself.
func wireChecks() []check {
	return []check{
		{name: "wire/unknown-method", run: checkWireUnknownMethod},
		{name: "wire/batch", run: checkWireBatch},
	}
}

// checkWireUnknownMethod (wire/unknown-method): a method the plugin does not
// know is answered with an error (with a valid `data.kind`).
func checkWireUnknownMethod(t *T) {
	p := t.Start(func(c *caller.Config) { c.SkipParamsCheck = true; c.Retries = -1 })
	_, err := p.Call(t.Ctx(), "contract.noSuchMethod", map[string]any{"target": t.hostTarget()}, 0)
	var re *caller.RemoteError
	switch {
	case errors.As(err, &re):
		// The caller side has checked the error object: a valid
		// data.kind, and a remedy for human.
	case err == nil:
		t.Failf("an unknown method was answered with a result, not an error")
	default:
		t.Failf("an unknown method was not answered with an error: %v", err)
	}
}

// checkWireBatch (wire/batch): each message is one JSON object on one line,
// so a JSON array (a JSON-RPC batch) is not a message. It is refused as
// JSON-RPC's invalid request (-32600) with id null and kind permanent, never
// answered with an array, and its element (a request, id 7) never runs; the
// plugin then serves on.
func checkWireBatch(t *T) {
	r := t.StartRaw()
	el, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "contract.noSuchMethod",
		"params": map[string]any{"deadline": time.Now().Add(10 * time.Second).UnixMilli(), "target": t.hostTarget()}})
	r.send("[" + string(el) + "]")
	isArray := func(l []byte) bool { return len(bytes.TrimLeft(l, " \t")) > 0 && bytes.TrimLeft(l, " \t")[0] == '[' }
	answer := func(l []byte) bool { return isArray(l) || replyID(l) == "null" || replyID(l) == "7" }
	line, ok := r.waitLine(protocol.Grace, answer)
	switch {
	case !ok:
		t.Failf("a batch line ([ {…id 7…} ]) got no answer within 5 s: it must be refused as an invalid request with id null")
	case isArray(line):
		t.Failf("a batch line was answered with an array (%s): a line is one message, a batch is refused as an invalid request", clip(string(line)))
	case replyID(line) == "7":
		t.Failf("the element of a batch line ran and was answered (%s): the batch is refused whole", clip(string(line)))
	}
	code, kind := errorOf(line)
	if code != -32600 || kind != string(protocol.Permanent) {
		t.Failf("a batch line was answered %s: want an invalid-request error (code -32600, data.kind permanent) with id null", clip(string(line)))
	}
	// The plugin serves on, and never answers the element.
	r.call(8, "contract.noSuchMethod", map[string]any{"target": t.hostTarget()}, caller.DefaultReadTimeout)
	if _, ok := r.waitReply("8", caller.DefaultReadTimeout); !ok {
		t.Failf("after refusing a batch the plugin answers no other call")
	}
	if l, ok := r.waitLine(0, func(l []byte) bool { return isArray(l) || replyID(l) == "7" }); ok {
		t.Failf("the batch's element was answered after all: %s", clip(string(l)))
	}
}

// replyID is a message's id as JSON text ("" when it has none).
func replyID(line []byte) string {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil {
		return ""
	}
	return string(m.ID)
}

// errorOf is an error reply's code and data.kind.
func errorOf(line []byte) (int64, string) {
	var m struct {
		Error *struct {
			Code int64 `json:"code"`
			Data struct {
				Kind string `json:"kind"`
			} `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || m.Error == nil {
		return 0, ""
	}
	return m.Error.Code, m.Error.Data.Kind
}

// wireSummaryChecks judge every message of the whole run, each by one
// transport rule the caller side enforces (protocol/caller's Violation).
// Run alone, they first drive a short session of their own.
func wireSummaryChecks() []check {
	rule := func(name, what string, rules ...string) check {
		return check{name: name, summary: true, run: func(t *T) {
			t.probeIfAlone()
			judgeViolations(t, what, rules)
		}}
	}
	return []check{
		rule("wire/json", "every message is one JSON object", caller.VNotJSON, caller.VNotObject),
		rule("wire/utf8", "every line is valid UTF-8", caller.VUTF8),
		rule("wire/line-length", "every line is at most 1 MiB", caller.VLineTooLong),
		rule("wire/envelope", "every message is a JSON-RPC 2.0 envelope with no unknown field", caller.VUnknownField, caller.VEnvelope),
		rule("wire/schema", "every result and notification matches the schema", caller.VSchema),
		rule("wire/error-kind", "every error carries a valid data.kind (and data.remedy for human)", caller.VErrorObject),
		rule("wire/pending-id", "every reply answers a pending request", caller.VNoPending),
		rule("wire/no-request", "the plugin sends no request to mu", caller.VRequest),
		rule("wire/notifications", "the only notifications are watch/settled and watch/restarted, one per watch, after its reply",
			caller.VNotification, caller.VUnknownWatch, caller.VEarlyNotification, caller.VSecondNotification),
	}
}

// judgeViolations fails the check for every violation of rules the run saw.
func judgeViolations(t *T, what string, rules []string) {
	t.s.mu.Lock()
	var hits []observed
	for _, v := range t.s.violations {
		if slices.Contains(rules, v.rule) {
			hits = append(hits, v)
		}
	}
	t.s.mu.Unlock()
	if len(hits) == 0 {
		return
	}
	var where []string
	for _, h := range hits {
		where = append(where, fmt.Sprintf("in %s: %s", h.check, h.text))
	}
	t.wire = hits[0].wire
	t.Fatalf("%s, but %d message(s) broke it: %s", what, len(hits), strings.Join(where, "; "))
}

// probeIfAlone drives a short session when no other check of this run has
// started the plugin: the handshake, an unknown method, and a read per
// declared seam.
func (t *T) probeIfAlone() {
	t.s.mu.Lock()
	n := t.s.sessions
	t.s.mu.Unlock()
	if n > 0 {
		return
	}
	d := t.Decl()
	p := t.Start(func(c *caller.Config) { c.SkipParamsCheck = true; c.Retries = -1 })
	ctx := t.Ctx()
	_, _ = p.Call(ctx, "contract.noSuchMethod", map[string]any{"target": t.hostTarget()}, 0)
	if d.Seams.Link != nil && d.Seams.Host == nil {
		_, _ = p.Exec(ctx, t.hostTarget(), "true", ".", 0)
	}
	if d.Seams.Link != nil {
		for _, ph := range d.Seams.Link.Checks {
			_, _ = caller.Invoke(ctx, p, protocol.MethodLinkCheckSteps, protocol.CheckStepsParams{
				Base: protocol.Base{Target: t.hostTarget()}, Phase: ph})

		}
	}
	t.Stop(p)
}
