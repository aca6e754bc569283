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

// ToWire maps any error a handler returns to the wire error object. It is
// the only place errors are mapped: an *Error keeps its kind; a context
// error becomes retryable for a read and unknown-outcome for an effect
// (effect tells which); anything else is permanent for a read and
// unknown-outcome for an effect, since nothing proves it did not happen.
func ToWire(err error, effect bool) *jrpc2.Error {
	var pe *Error
	if !errors.As(err, &pe) {
		k := Permanent
		switch {
		case effect:
			k = UnknownOutcome
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
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
// invalid requests, unknown methods, cancelled calls) to a kind, for replies
// that never passed through a handler.
func kindForCode(c jrpc2.Code) Kind {
	switch c {
	case CodeRetryable:
		return Retryable
	case CodeHuman:
		return Human
	case CodeUnknownOutcome, jrpc2.Cancelled, jrpc2.DeadlineExceeded:
		return UnknownOutcome
	}
	return Permanent
}
