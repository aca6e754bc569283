package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/creachadair/jrpc2"
)

// Kind is an error's data.kind: what mu does with it.
type Kind string

const (
	// Retryable: nothing happened; mu retries with the same params.
	Retryable Kind = "retryable"
	// Permanent: nothing happened, and a retry will not help.
	Permanent Kind = "permanent"
	// Human: a person must act; Remedy says how.
	Human Kind = "human"
	// UnknownOutcome: it may have happened.
	UnknownOutcome Kind = "unknown-outcome"
)

// Valid reports whether k is one of the four kinds.
func (k Kind) Valid() bool {
	switch k {
	case Retryable, Permanent, Human, UnknownOutcome:
		return true
	}
	return false
}

// Error codes this project uses for each kind. The spec gives no codes; mu
// reads only data.kind. The JSON-RPC standard codes keep their meaning.
const (
	CodeRetryable      jrpc2.Code = -32001
	CodePermanent      jrpc2.Code = -32002
	CodeHuman          jrpc2.Code = -32003
	CodeUnknownOutcome jrpc2.Code = -32004
)

// ErrorData is the error object's data.
type ErrorData struct {
	Kind   Kind   `json:"kind"`
	Remedy string `json:"remedy,omitempty"`
}

// Error is the one error type a backend returns. Every error reply on the
// wire is built from one (see ToWire).
type Error struct {
	Kind    Kind
	Message string
	Remedy  string // required for Human
	Code    jrpc2.Code
	Err     error // the cause, never put on the wire
	// NeverStarted: the error proves that a run (Runs) never started, so
	// it keeps its kind even when the call was cut. Set by NotStarted only.
	NeverStarted bool
}

func (e *Error) Error() string {
	if e.Remedy != "" {
		return fmt.Sprintf("%s: %s (remedy: %s)", e.Kind, e.Message, e.Remedy)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error of kind k.
func Errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

// HumanError builds a hand-back: a person must act, and remedy says how.
func HumanError(remedy, format string, args ...any) *Error {
	return &Error{Kind: Human, Message: fmt.Sprintf(format, args...), Remedy: remedy}
}

// Wrap builds an Error of kind k whose message is msg and cause err; the
// cause's text is appended to the message.
func Wrap(k Kind, err error, msg string) *Error {
	m := msg
	if err != nil {
		m = msg + ": " + err.Error()
	}
	return &Error{Kind: k, Message: m, Err: err}
}

// NotStarted builds the retryable error of a call that can show its run
// never started: nothing was run, so a retry is safe. It is the only way a
// link.exec, link.fetch or link.push cut by its deadline or $/cancel may
// answer retryable (see ToWire). The cause's text is appended to msg.
func NotStarted(err error, msg string) *Error {
	e := Wrap(Retryable, err, msg)
	e.NeverStarted = true
	return e
}

// mayHaveHappened reports whether an error of method, whatever its cause,
// leaves open whether the call took effect: an effect's, or a run's.
func mayHaveHappened(method string) bool { return IsEffect(method) || IsRun(method) }

func kindCode(k Kind) jrpc2.Code {
	switch k {
	case Retryable:
		return CodeRetryable
	case Human:
		return CodeHuman
	case UnknownOutcome:
		return CodeUnknownOutcome
	}
	return CodePermanent
}

// isCut reports whether err holds a context error: for a handler's error,
// its call ended (its deadline, $/cancel, shutdown or stdin EOF) before it
// answered. Serve adds the call's context error to the error of every call
// whose context ended, so a backend need not wrap it.
func isCut(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// ToWire maps any error a handler of method returns to the wire error
// object. It is the only place errors are mapped:
//
//   - the cut-run rule: a run (Runs) whose error holds a context error was
//     cut after its handler began, and the run may have happened: it is
//     unknown-outcome, whatever kind the backend chose, unless the backend
//     built the error with NotStarted (it can show the run never started);
//   - otherwise an *Error keeps its kind;
//   - an untyped error is unknown-outcome for an effect or a run (nothing
//     proves it did not happen), retryable for a read cut by its context,
//     and permanent for any other read.
func ToWire(err error, method string) *jrpc2.Error {
	var pe *Error
	typed := errors.As(err, &pe)
	switch {
	case IsRun(method) && isCut(err) && !(typed && pe.NeverStarted):
		msg := err.Error()
		if typed {
			msg = pe.Message
		}
		pe = &Error{Kind: UnknownOutcome, Message: msg}
	case typed:
	default:
		k := Permanent
		switch {
		case mayHaveHappened(method):
			k = UnknownOutcome
		case isCut(err):
			k = Retryable
		}
		pe = &Error{Kind: k, Message: err.Error()}
	}
	if !pe.Kind.Valid() {
		pe = &Error{Kind: Permanent, Message: pe.Message}
	}
	if pe.Kind == Human && pe.Remedy == "" {
		pe = &Error{Kind: Human, Message: pe.Message, Remedy: "see the plugin's documentation", Code: pe.Code}
	}
	code := pe.Code
	if code == 0 {
		code = kindCode(pe.Kind)
	}
	msg := pe.Message
	if msg == "" {
		msg = string(pe.Kind)
	}
	data, _ := json.Marshal(ErrorData{Kind: pe.Kind, Remedy: pe.Remedy})
	return &jrpc2.Error{Code: code, Message: msg, Data: data}
}

// kindForCode maps the JSON-RPC codes jrpc2 itself emits (parse errors,
// invalid requests, unknown methods, calls cancelled before their handler
// ran) to a kind, for replies that never passed through a handler. jrpc2
// answers Cancelled or DeadlineExceeded only for a call whose handler never
// ran (every handler's error is already a *jrpc2.Error from ToWire): nothing
// happened, so it is retryable whatever the method.
func kindForCode(c jrpc2.Code) Kind {
	switch c {
	case CodeRetryable, jrpc2.Cancelled, jrpc2.DeadlineExceeded:
		return Retryable
	case CodeHuman:
		return Human
	case CodeUnknownOutcome:
		return UnknownOutcome
	}
	return Permanent
}
