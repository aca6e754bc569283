package protocol

import (
	"context"
	"sort"
)

// The method table: every method of the spec, declared once, as a typed
// value. Its Name is the wire's, its Info says whether it is an effect or a
// run, and its type parameters are its params and its result: the server
// registers a handler through it (Serve: a handler returns the result
// type), the caller invokes through it (protocol/caller's Invoke: the
// result type is inferred), and so do the tests.

// Method is one method: P is its params, R its result (Null for a null
// one). Only this package declares them (the Method* values below).
type Method[P, R any] struct{ Info }

// Info is what a method is, whatever its types.
type Info struct {
	Name string // as on the wire
	// Effect: mu journals its intent before sending it, and resolves it
	// after a crash (the spec's "Effects and replay").
	Effect bool
	// Run: it runs something on the host and answers its outcome, within
	// its params' timeoutMs: a cut run may have happened.
	Run bool
}

// The methods, as mu sends them.
var (
	MethodInitialize = declare[InitializeParams, InitializeResult](Info{Name: "initialize"})
	MethodShutdown   = declare[Null, Null](Info{Name: "shutdown"})
	// MethodCancel is $/cancel, a notification (Serve also takes it as a
	// request, answered null).
	MethodCancel = declare[CancelParams, Null](Info{Name: "$/cancel"})

	MethodHostAcquire = declare[AcquireParams, AcquireResult](Info{Name: "host.acquire", Effect: true})
	MethodHostLookup  = declare[LookupParams, HostLookupResult](Info{Name: "host.lookup"})
	MethodHostStatus  = declare[Base, HostStatus](Info{Name: "host.status"})
	MethodHostRelease = declare[KeyParams, Null](Info{Name: "host.release", Effect: true})

	MethodLinkExec       = declare[ExecParams, ExecResult](Info{Name: "link.exec", Run: true})
	MethodLinkFetch      = declare[FetchParams, ExecResult](Info{Name: "link.fetch", Run: true})
	MethodLinkPush       = declare[PushParams, ExecResult](Info{Name: "link.push", Run: true})
	MethodLinkCheckSteps = declare[CheckStepsParams, []Step](Info{Name: "link.checkSteps"})

	MethodJobStart      = declare[JobStartParams, JobStartResult](Info{Name: "job.start", Effect: true})
	MethodJobLookup     = declare[LookupParams, JobLookupResult](Info{Name: "job.lookup"})
	MethodJobStatus     = declare[Base, JobStatus](Info{Name: "job.status"})
	MethodJobStop       = declare[KeyParams, Null](Info{Name: "job.stop", Effect: true})
	MethodJobAttach     = declare[Base, View](Info{Name: "job.attach"})
	MethodJobCheckSteps = declare[CheckStepsParams, []Step](Info{Name: "job.checkSteps"})

	MethodChannelReadStates = declare[ReadStatesParams, map[string]Reading](Info{Name: "channel.readStates"})
	MethodChannelBaseline   = declare[Base, *Baseline](Info{Name: "channel.baseline"})
	MethodChannelReceipt    = declare[ReceiptParams, Receipt](Info{Name: "channel.receipt"})
	MethodChannelLastRun    = declare[LastRunParams, *Observation](Info{Name: "channel.lastRun"})
	MethodChannelWatch      = declare[WatchParams, WatchResult](Info{Name: "channel.watch"})
	MethodChannelSend       = declare[SendParams, SendResult](Info{Name: "channel.send", Effect: true})
	MethodChannelFresh      = declare[FreshParams, SendResult](Info{Name: "channel.fresh", Effect: true})
	MethodChannelCommand    = declare[CommandParams, SendResult](Info{Name: "channel.command", Effect: true})
	MethodChannelInterrupt  = declare[InterruptParams, InterruptResult](Info{Name: "channel.interrupt", Effect: true})
	MethodChannelAbort      = declare[AbortParams, AbortResult](Info{Name: "channel.abort", Effect: true})
	MethodChannelAnswer     = declare[AnswerParams, AnswerResult](Info{Name: "channel.answer", Effect: true})
)

// The only two notifications a plugin may send.
const (
	NotifyWatchSettled   = "watch/settled"
	NotifyWatchRestarted = "watch/restarted"
)

// declared is every method by name (declare fills it as the package's
// variables are initialised).
var declared = map[string]Info{}

func declare[P, R any](i Info) Method[P, R] {
	if _, dup := declared[i.Name]; dup {
		panic("protocol: method " + i.Name + " declared twice")
	}
	declared[i.Name] = i
	return Method[P, R]{i}
}

// Lookup is the method named name, as declared.
func Lookup(name string) (Info, bool) {
	i, ok := declared[name]
	return i, ok
}

// IsEffect reports whether method is an effect.
func IsEffect(method string) bool { return declared[method].Effect }

// IsRun reports whether method is a run (link.exec, link.fetch, link.push).
func IsRun(method string) bool { return declared[method].Run }

// MethodNames is every declared method's name, sorted.
func MethodNames() []string {
	names := make([]string, 0, len(declared))
	for n := range declared {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Route is one method's handler, typed at registration (Method.Serve), for
// a Methods table.
type Route struct {
	name string
	h    Handler
}

// Serve is m's handler fn as a Route: the call's params decoded into a P,
// unknown fields refused (Call.Decode: a failure is a permanent error
// naming the method, and fn does not run), and fn's R the result. It is
// the one way a backend writes a handler, so a method table reads
//
//	protocol.NewMethods(protocol.MethodLinkExec.Serve(b.exec), …)
//
// with b.exec a func(ctx, *protocol.Call, protocol.ExecParams)
// (protocol.ExecResult, error): a handler of another result type does not
// compile.
func (m Method[P, R]) Serve(fn func(ctx context.Context, c *Call, p P) (R, error)) Route {
	return Route{m.Name, func(ctx context.Context, c *Call) (any, error) {
		var p P
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		return fn(ctx, c, p)
	}}
}

// Answer is v as m's result, for a Handler that answers in m's place (a
// wrapper's own answer): v must be m's result type.
func (m Method[P, R]) Answer(v R) (any, error) { return v, nil }

// NewMethods is a method table of routes.
func NewMethods(routes ...Route) Methods {
	ms := make(Methods, len(routes))
	ms.Add(routes...)
	return ms
}

// Add puts routes in the table, each in place of its method's handler.
func (ms Methods) Add(routes ...Route) {
	for _, r := range routes {
		ms[r.name] = r.h
	}
}

// Null is a null result (host.release, job.stop, shutdown) or params
// (shutdown): it is JSON null, and reads any JSON as itself.
type Null struct{}

// MarshalJSON is null.
func (Null) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// UnmarshalJSON reads anything: the schema has checked it.
func (*Null) UnmarshalJSON([]byte) error { return nil }
