package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mu-org/mu-plugins/internal/safefile"
	"github.com/mu-org/mu-plugins/protocol"
)

// Fault names: every fault a scenario can inject (docs/fake.md).
const (
	FaultDelay           = "delay"               // sleep ms before the call runs (ctx ends it early)
	FaultError           = "error"               // answer with an error of kind (message, remedy)
	FaultHang            = "hang"                // never answer, not even to $/cancel
	FaultCrashBefore     = "crash-before"        // exit before the effect lands
	FaultCrashAfter      = "crash-after"         // exit after the effect landed, before the reply
	FaultReply           = "reply"               // answer with result instead (after the call ran)
	FaultNotJSON         = "not-json"            // the reply is a line that is not JSON
	FaultUnknownField    = "unknown-field"       // the reply carries a field the spec does not name
	FaultOrphanReply     = "orphan-reply"        // a reply to no pending request, before the real one
	FaultRequestToMu     = "request-to-mu"       // a request to mu, before the real reply
	FaultBadNotify       = "bad-notification"    // a notification other than the two, before the reply
	FaultDoubleNotify    = "double-notification" // channel.watch: two notifications for one watch
	FaultEarlyNotify     = "early-notification"  // channel.watch: the notification before its reply
	FaultLongLine        = "long-line"           // the reply is a line past 1 MiB
	FaultInvalidUTF8     = "invalid-utf8"        // the reply holds bytes that are not UTF-8
	FaultEscapeGroup     = "escape-group"        // start a process outside the plugin's group (setsid), with the plugin's env
	FaultCanary          = "canary-stderr"       // print MU_PLUGIN_CANARY's value to stderr
	FaultIgnoreEOF       = "ignore-eof"          // keep running after stdin EOF (process-wide; no method)
	FaultNewestTurn      = "newest-turn"         // channel.lastRun, channel.watch: the newest settled turn, not turn afterRuns+1 of inc
	FaultEarlyTimeout    = "early-timeout"       // link.exec: a script holding `sleep` answers timed out after 0.5 s, whatever its timeoutMs
	FaultSetsidRuns      = "setsid-runs"         // link.exec, link.fetch, link.push: each run in a session of its own (setsid)
	FaultUnfencedReceipt = "unfenced-receipt"    // channel.receipt: a not-accepted that is not final (no fence: a later delivery of the msgId is taken)
	FaultEarlierTurn     = "earlier-turn"        // channel.lastRun, channel.watch: an earlier incarnation's turn afterRuns+1 answers settled, as if kept
)

// earlyTimeout is how long a run lives under the early-timeout fault.
const earlyTimeout = 500 * time.Millisecond

// FaultNames lists every fault, in documentation order.
var FaultNames = []string{
	FaultDelay, FaultError, FaultHang, FaultCrashBefore, FaultCrashAfter, FaultReply,
	FaultNotJSON, FaultUnknownField, FaultOrphanReply, FaultRequestToMu, FaultBadNotify,
	FaultDoubleNotify, FaultEarlyNotify, FaultLongLine, FaultInvalidUTF8,
	FaultEscapeGroup, FaultCanary, FaultIgnoreEOF,
	FaultNewestTurn, FaultEarlyTimeout, FaultSetsidRuns, FaultUnfencedReceipt, FaultEarlierTurn,
}

// injected are the lines the faults that write beside a reply put on the
// wire (before the reply, or before the handshake's with "initialize").
var injected = map[string]string{
	FaultOrphanReply: `{"jsonrpc":"2.0","id":"fake-orphan","result":null}`,
	FaultRequestToMu: `{"jsonrpc":"2.0","id":"fake-request","method":"mu.hello","params":{}}`,
	FaultBadNotify:   `{"jsonrpc":"2.0","method":"fake/hello","params":{}}`,
}

// inHandler are the faults that change what the handler itself does: it
// asks for them with ctxFault.
var inHandler = map[string]bool{
	FaultDoubleNotify: true, FaultEarlyNotify: true, FaultNewestTurn: true,
	FaultEarlyTimeout: true, FaultSetsidRuns: true, FaultUnfencedReceipt: true, FaultEarlierTurn: true,
}

// replacesReply are the faults whose line is the call's reply: the reply
// the handler's answer makes never reaches the wire.
var replacesReply = map[string]bool{
	FaultNotJSON: true, FaultUnknownField: true, FaultLongLine: true, FaultInvalidUTF8: true,
}

// replyReplaced marks, for the handler (ctxFault), a call whose reply a
// fault replaces: a watch it would start never starts, since mu never sees
// its watchId.
const replyReplaced = "(reply replaced)"

// Scenario is the --scenario file: the faults to inject.
type Scenario struct {
	Faults []Fault `json:"faults"`
}

// Fault is one injected fault. Method is a method name, "*" (any call) or
// "initialize" (at start, before the handshake is read); ignore-eof takes
// none. Call picks the n-th call of Method in this invocation (1-based);
// 0 means every call.
type Fault struct {
	Method  string          `json:"method,omitempty"`
	Call    int             `json:"call,omitempty"`
	Fault   string          `json:"fault"`
	Ms      int64           `json:"ms,omitempty"`
	Kind    string          `json:"kind,omitempty"`
	Message string          `json:"message,omitempty"`
	Remedy  string          `json:"remedy,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
}

// LoadScenario reads and checks a scenario file (unknown fields refused).
func LoadScenario(path string) (*Scenario, error) {
	b, err := safefile.Read(path, safefile.MaxConfig)
	if err != nil {
		return nil, fmt.Errorf("--scenario: %w", err)
	}
	return ParseScenario(b)
}

// ParseScenario checks a scenario's JSON.
func ParseScenario(b []byte) (*Scenario, error) {
	var s Scenario
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	for i, f := range s.Faults {
		if !knownFault(f.Fault) {
			return nil, fmt.Errorf("scenario: fault %d: unknown fault %q (one of %s)", i, f.Fault, strings.Join(FaultNames, ", "))
		}
		if f.Fault != FaultIgnoreEOF && f.Method == "" {
			return nil, fmt.Errorf("scenario: fault %d (%s): method is required", i, f.Fault)
		}
		if f.Call < 0 {
			return nil, fmt.Errorf("scenario: fault %d: call must be 0 (every call) or more", i)
		}
		if f.Fault == FaultError {
			k := protocol.Kind(f.Kind)
			if !k.Valid() {
				return nil, fmt.Errorf("scenario: fault %d: kind %q is not retryable, permanent, human or unknown-outcome", i, f.Kind)
			}
		}
		if f.Fault == FaultReply && !json.Valid(f.Result) {
			return nil, fmt.Errorf("scenario: fault %d: reply needs a JSON result", i)
		}
	}
	return &s, nil
}

func knownFault(n string) bool {
	for _, k := range FaultNames {
		if k == n {
			return true
		}
	}
	return false
}

// faults applies a scenario: counts calls per method and fires the faults
// that match.
type faults struct {
	s     *Scenario
	wire  *faultWire // stdout, where the wire faults write
	mu    sync.Mutex
	count map[string]int
	never chan struct{}
	exit  func(code int)
}

func newFaults(s *Scenario, stdout io.WriteCloser) *faults {
	if s == nil {
		s = &Scenario{}
	}
	return &faults{s: s, wire: newFaultWire(stdout), count: map[string]int{}, never: make(chan struct{}), exit: os.Exit}
}

// Linger is the ignore-eof fault, for main once Serve returned: the
// process stays, idle, for 2 minutes (so a caller that never kills the
// group leaks nothing). A nil scenario, or one without it, returns at once.
func (s *Scenario) Linger() {
	if s == nil {
		return
	}
	for _, ft := range s.Faults {
		if ft.Fault == FaultIgnoreEOF {
			time.Sleep(2 * time.Minute)
			return
		}
	}
}

// match counts one call of method and returns the faults it fires.
func (fs *faults) match(method string) []Fault {
	fs.mu.Lock()
	fs.count[method]++
	n := fs.count[method]
	fs.mu.Unlock()
	var out []Fault
	for _, ft := range fs.s.Faults {
		if ft.Fault == FaultIgnoreEOF {
			continue
		}
		if (ft.Method == method || (ft.Method == "*" && method != "initialize")) && (ft.Call == 0 || ft.Call == n) {
			out = append(out, ft)
		}
	}
	return out
}

type ctxFaultsKey struct{}

// ctxFault reports whether the call carries the named fault, one that
// changes how the handler itself behaves.
func ctxFault(ctx context.Context, name string) bool {
	list, _ := ctx.Value(ctxFaultsKey{}).([]string)
	for _, n := range list {
		if n == name {
			return true
		}
	}
	return false
}

// wrap puts a method's handler behind the scenario.
func (fs *faults) wrap(method string, h protocol.Handler) protocol.Handler {
	return func(ctx context.Context, call *protocol.Call) (any, error) {
		list := fs.match(method)
		if len(list) == 0 {
			return h(ctx, call)
		}
		var after []Fault
		var changed []string
		for _, ft := range list {
			switch {
			case inHandler[ft.Fault]:
				changed = append(changed, ft.Fault)
			case injected[ft.Fault] != "":
				fs.wire.inject([]byte(injected[ft.Fault]))
			case ft.Fault == FaultDelay:
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(time.Duration(ft.Ms) * time.Millisecond):
				}
			case ft.Fault == FaultError:
				msg := ft.Message
				if msg == "" {
					msg = "injected " + ft.Kind + " error"
				}
				return nil, &protocol.Error{Kind: protocol.Kind(ft.Kind), Message: msg, Remedy: ft.Remedy}
			case ft.Fault == FaultHang:
				<-fs.never
			case ft.Fault == FaultCrashBefore:
				fs.exit(3)
			case ft.Fault == FaultEscapeGroup:
				escapeGroup()
			case ft.Fault == FaultCanary:
				leakCanary()
			default:
				if replacesReply[ft.Fault] && !slices.Contains(changed, replyReplaced) {
					changed = append(changed, replyReplaced)
				}
				after = append(after, ft)
			}
		}
		if len(changed) > 0 {
			ctx = context.WithValue(ctx, ctxFaultsKey{}, changed)
		}
		v, err := h(ctx, call)
		for _, ft := range after {
			switch ft.Fault {
			case FaultCrashAfter:
				fs.exit(3)
			case FaultReply:
				v, err = ft.Result, nil
			case FaultNotJSON:
				fs.wire.replaceReply(call.ID(), []byte("this is not JSON: the fake's injected reply to "+method))
			case FaultUnknownField:
				fs.wire.replaceReply(call.ID(), rawReply(call.ID(), `"result":`+marshal(v)+`,"unknownField":true`))
			case FaultLongLine:
				pad := strings.Repeat("x", protocol.MaxLine+1)
				fs.wire.replaceReply(call.ID(), rawReply(call.ID(), `"error":{"code":-32002,"message":"`+pad+`","data":{"kind":"permanent"}}`))
			case FaultInvalidUTF8:
				fs.wire.replaceReply(call.ID(), rawReply(call.ID(), "\"error\":{\"code\":-32002,\"message\":\"bad bytes \xff\xfe\",\"data\":{\"kind\":\"permanent\"}}"))
			}
		}
		return v, err
	}
}

// leakCanary is the canary-stderr fault: the secret on stderr.
func leakCanary() {
	fmt.Fprintf(os.Stderr, "mu-plugin-fake: injected leak: canary=%s\n", os.Getenv("MU_PLUGIN_CANARY"))
}

func rawReply(id, payload string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,` + payload + `}`)
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

// escapeGroup starts a process in a session of its own, inheriting the
// plugin's whole environment: the fault the contract suite must report. It
// sleeps 120 s, then exits by itself.
func escapeGroup() {
	cmd := exec.Command("/bin/sleep", "120")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err == nil {
		go func() { _ = cmd.Wait() }()
	}
}

// StartupFaults fires the scenario's "initialize" faults before Serve reads
// the handshake: delay, crash-before, canary-stderr, escape-group, and the
// raw lines (not-json, orphan-reply, request-to-mu, bad-notification,
// long-line, invalid-utf8) written straight to stdout.
func (f *Fake) StartupFaults() {
	for _, ft := range f.faults.match("initialize") {
		switch ft.Fault {
		case FaultDelay:
			time.Sleep(time.Duration(ft.Ms) * time.Millisecond)
		case FaultCrashBefore, FaultCrashAfter:
			f.faults.exit(3)
		case FaultCanary:
			leakCanary()
		case FaultEscapeGroup:
			escapeGroup()
		case FaultOrphanReply, FaultRequestToMu, FaultBadNotify:
			f.faults.wire.inject([]byte(injected[ft.Fault]))
		case FaultNotJSON:
			f.faults.wire.inject([]byte("this is not JSON"))
		case FaultLongLine:
			f.faults.wire.inject([]byte(`{"jsonrpc":"2.0","method":"fake/pad","params":{"pad":"` + strings.Repeat("x", protocol.MaxLine) + `"}}`))
		case FaultInvalidUTF8:
			f.faults.wire.inject([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"fake/bytes\",\"params\":{\"b\":\"\xff\"}}"))
		}
	}
}
