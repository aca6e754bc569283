package caller

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mu-org/mu-plugins/protocol"
)

// Sentinels. Every error a call returns matches exactly one of ErrNotSent,
// ErrUnanswered, ErrInvalidReply (with errors.Is), or is a *RemoteError.
var (
	// ErrNotSent: the request was never written. A definite refusal: nothing
	// happened, and the plugin was not stopped by this call.
	ErrNotSent = errors.New("call not sent")
	// ErrUnanswered: the request may have reached the plugin but no valid
	// answer came (deadline, cancel, stop, a violation, the plugin's exit).
	// A read is unknown; an effect is an unknown outcome.
	ErrUnanswered = errors.New("call unanswered")
	// ErrInvalidReply: the answer broke the protocol (see *Violation). As
	// unanswered, never a success.
	ErrInvalidReply = errors.New("invalid reply")

	// ErrBroken: the plugin sent an invalid message and is refused for the
	// rest of the invocation. Every *Violation matches it.
	ErrBroken = errors.New("plugin broken")
	// ErrStopped: the plugin was stopped (Stop, or a stop begun by a
	// deadline or a cancel).
	ErrStopped = errors.New("plugin stopped")
	// ErrDeadline: the call's deadline passed without an answer.
	ErrDeadline = errors.New("call deadline passed")
	// ErrExited: the plugin's leader process exited.
	ErrExited = errors.New("plugin process exited")
	// ErrStdoutClosed: the plugin closed its stdout while still expected to
	// answer.
	ErrStdoutClosed = errors.New("plugin closed its stdout")
)

// LoadRefusal is mu's refusal of a plugin (exit 4): a registration check or
// a load rule failed. Rule names it: one of protocol's Rule* names, or one
// of this package's Rule* refusal names.
type LoadRefusal struct {
	Name   string   // the registered name
	Rule   string   // the first rule broken
	Rules  []string // every rule broken, Rule first
	Detail string
	Err    error // the cause, if any (a *protocol.LoadError, a *Violation, ErrUnanswered…)
}

func (e *LoadRefusal) Error() string {
	return fmt.Sprintf("plugin %q refused (rule %s): %s", e.Name, e.Rule, e.Detail)
}

func (e *LoadRefusal) Unwrap() error { return e.Err }

// ExitCode is mu's exit code for a refused plugin.
func (e *LoadRefusal) ExitCode() int { return 4 }

// Refusal rule names this package adds to protocol's (protocol.Rules).
const (
	// Registration checks (spec "Registration and trust").
	RuleRegName     = "registration-name"     // the registered name is empty or not a plain name
	RuleRegPath     = "registration-path"     // argv[0] is not an absolute path
	RuleRegBasename = "registration-basename" // basename is not mu-plugin-<name>
	RuleRegFile     = "registration-file"     // missing, or not a regular file (after symlinks)
	RuleRegOwner    = "registration-owner"    // not owned by the current uid
	RuleRegWritable = "registration-writable" // group or world writable
	RuleRegStart    = "registration-start"    // the argv could not be started

	// Handshake and load rules the declaration alone cannot decide.
	RuleHandshakeError = "handshake-error"      // initialize answered with an error
	RuleHandshakeReply = "handshake-unanswered" // no valid answer to initialize
	RuleName           = "name"                 // plugin.name is not the registered name
	RuleDigest         = "schema-digest"        // schema is not the published file's digest
	RuleSchema         = "declaration-schema"   // the declaration does not match the schema
	RuleNeededSeam     = "needed-seam"          // a seam the registration or a host needs is missing
	RuleRecorded       = "recorded-declaration" // differs from the one recorded by mu plugin add
)

// RemoteError is a plugin's error reply.
type RemoteError struct {
	Method  string
	Code    int64
	Message string
	Kind    protocol.Kind
	Remedy  string          // set for Kind human
	Data    json.RawMessage // the whole data object, as sent
}

func (e *RemoteError) Error() string {
	if e.Remedy != "" {
		return fmt.Sprintf("%s: %s: %s (remedy: %s)", e.Method, e.Kind, e.Message, e.Remedy)
	}
	return fmt.Sprintf("%s: %s: %s", e.Method, e.Kind, e.Message)
}

// Retryable reports whether mu retries the call with the same params.
func (e *RemoteError) Retryable() bool { return e.Kind == protocol.Retryable }

// NotSentError: the call was never written. It matches ErrNotSent; Cause
// says why (a context error, ErrStopped, a *Violation…).
type NotSentError struct {
	Method string
	Cause  error
}

func (e *NotSentError) Error() string {
	return fmt.Sprintf("%s: not sent: %v", e.Method, e.Cause)
}
func (e *NotSentError) Is(t error) bool { return t == ErrNotSent }
func (e *NotSentError) Unwrap() error   { return e.Cause }

// UnansweredError: the call was written and got no valid answer. It matches
// ErrUnanswered; Cause says why (ErrDeadline, a context error, ErrExited, a
// *Violation, ErrStopped…).
type UnansweredError struct {
	Method string
	ID     int64
	Cause  error
}

func (e *UnansweredError) Error() string {
	return fmt.Sprintf("%s (id %d): unanswered: %v", e.Method, e.ID, e.Cause)
}
func (e *UnansweredError) Is(t error) bool { return t == ErrUnanswered }
func (e *UnansweredError) Unwrap() error   { return e.Cause }

// InvalidReplyError: the call's answer broke the protocol; the plugin is
// broken. It matches ErrInvalidReply and ErrBroken.
type InvalidReplyError struct {
	Method    string
	ID        int64
	Violation *Violation
}

func (e *InvalidReplyError) Error() string {
	return fmt.Sprintf("%s (id %d): invalid reply: %v", e.Method, e.ID, e.Violation)
}
func (e *InvalidReplyError) Is(t error) bool { return t == ErrInvalidReply }
func (e *InvalidReplyError) Unwrap() error   { return e.Violation }

// Violation is an invalid inbound message: it breaks the plugin for the
// rest of the invocation. Rule is one of the Violation* names; Excerpt is the
// start of the offending line (at most 120 bytes, made valid UTF-8).
type Violation struct {
	Rule    string
	Detail  string
	Excerpt string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("protocol violation %s: %s: %q", v.Rule, v.Detail, v.Excerpt)
}

// Is makes every violation match ErrBroken.
func (v *Violation) Is(t error) bool { return t == ErrBroken }

// Violation rule names: each one transport rule of the spec.
const (
	VLineTooLong        = "line-too-long"       // over 1 MiB
	VUTF8               = "invalid-utf8"        // not valid UTF-8 (raw bytes)
	VNotJSON            = "not-json"            // not one JSON value (an empty line included)
	VNotObject          = "not-an-object"       // JSON, but not an object
	VUnknownField       = "unknown-field"       // an envelope key other than JSON-RPC's, or a repeated one
	VEnvelope           = "envelope"            // jsonrpc not "2.0", no result/error, both…
	VSchema             = "schema"              // a result or params that does not match the schema
	VErrorObject        = "error-object"        // an error object that does not match the schema, or a bad data.kind
	VNoPending          = "reply-to-no-pending" // a reply whose id is not a pending call
	VRequest            = "request-to-mu"       // the plugin sent a request
	VNotification       = "notification-method" // a notification other than watch/settled, watch/restarted
	VUnknownWatch       = "notification-unknown-watch"
	VEarlyNotification  = "notification-before-reply"
	VSecondNotification = "second-notification"
)

func excerpt(line []byte) string {
	const n = 120
	if len(line) > n {
		line = line[:n]
	}
	return toValidUTF8(line)
}
