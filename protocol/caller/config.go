package caller

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// Defaults, from the spec's "Timeouts and cancel".
const (
	// DefaultReadTimeout bounds the handshake and every call that is not
	// link.exec, link.fetch or link.push.
	DefaultReadTimeout = 10 * time.Second
	// DefaultExecTimeout is link.exec's and link.fetch's timeoutMs when the
	// caller gives none.
	DefaultExecTimeout = protocol.DefaultRunTimeout
	// DefaultRetries is how often a retryable error is retried.
	DefaultRetries = 3
	// MuVersion is the mu version sent in initialize.
	MuVersion = "5"
)

// Config starts one plugin for one invocation.
type Config struct {
	// Name is the registered name: argv[0]'s basename is mu-plugin-<Name>
	// and the plugin must declare it.
	Name string
	// Argv is the registered argv: an absolute path, then its arguments.
	Argv []string
	// Env is applied over BaseEnv (KEY=VALUE; a later entry wins). mu's
	// local-only variables are removed from both (see LocalOnly).
	Env []string
	// BaseEnv is mu's environment; nil means os.Environ().
	BaseEnv []string
	// Dir is the plugin's working directory; "" is the caller's.
	Dir string
	// Local, when set, runs the plugin in this process instead of Argv, as
	// jrpc2's server.NewLocal does for tests: protocol.Serve(*Local) on
	// the caller's pipes (its In and Out are replaced), for tests that
	// look inside a backend or run it under this binary's race detector.
	// Serve's return is the plugin's exit (StopReport.Exit its error).
	// There is no process: no registration checks, Env, BaseEnv and Dir do
	// not apply, Pgid is 0, and a stop can only wait for Serve to return
	// (GroupEmpty then tells whether it did; nothing is killed).
	Local *protocol.Options

	// Stderr, if set, gets a copy of everything the plugin writes to
	// stderr. The caller itself never parses it beyond keeping its first
	// line (FirstStderrLine).
	Stderr io.Writer
	// Transcript, if set, sees every message on the wire, both directions,
	// in order (see Event). It is called synchronously with the wire locked:
	// it must be quick and must not call back into the Plugin.
	Transcript func(Event)

	// Need lists the seams ("link", "job", "host", "channel") the
	// registration or a host needs: a missing one refuses the plugin.
	Need []string
	// Recorded is the declaration mu plugin add recorded (the initialize
	// result as JSON): one that differs semantically refuses the plugin.
	Recorded json.RawMessage
	// Digest is the schema digest the plugin must declare; "" is the
	// embedded schema's (schemas.V1Digest()).
	Digest string
	// Protocol is the range offered in initialize; zero is 1..1.
	Protocol protocol.VersionRange
	// Mu is the mu version sent in initialize; "" is MuVersion.
	Mu string

	// HandshakeTimeout bounds initialize (default 10 s).
	HandshakeTimeout time.Duration
	// ReadTimeout is the default budget of a call other than link.exec,
	// link.fetch and link.push (default 10 s).
	ReadTimeout time.Duration
	// StopGrace is how long the stop sequence waits for the group to empty
	// after closing stdin before it kills the group (default 5 s: the
	// spec's; lower it only in tests).
	StopGrace time.Duration
	// Retries is how often Call retries a retryable error with the same
	// params (default 3; negative: never).
	Retries int
	// RetryBackoff is the pause before the n-th retry, times n (default
	// 100 ms).
	RetryBackoff time.Duration
	// RunGrace is how long a timed-out run (link.exec, link.fetch or
	// link.push answered with exitCode null) of a link that declares
	// remoteOnTimeout "stopping" is held before it is returned: the spec's
	// "mu then waits the grace out, still holding the call's channel,
	// before it returns the timed-out run" (default 5 s; lower it only in
	// tests).
	RunGrace time.Duration
	// waitGrace waits d or until ctx ends (tests replace it to see the wait).
	waitGrace func(ctx context.Context, d time.Duration)
	// SkipParamsCheck sends params even when they do not match the schema
	// (for tests that check how a plugin answers bad params). Off, a call
	// with invalid params fails not sent.
	SkipParamsCheck bool
}

func (c *Config) withDefaults() Config {
	d := *c
	if d.HandshakeTimeout <= 0 {
		d.HandshakeTimeout = DefaultReadTimeout
	}
	if d.ReadTimeout <= 0 {
		d.ReadTimeout = DefaultReadTimeout
	}
	if d.StopGrace <= 0 {
		d.StopGrace = protocol.Grace
	}
	if d.RunGrace <= 0 {
		d.RunGrace = protocol.Grace
	}
	if d.waitGrace == nil {
		d.waitGrace = sleepCtx
	}
	if d.Retries == 0 {
		d.Retries = DefaultRetries
	}
	if d.RetryBackoff <= 0 {
		d.RetryBackoff = 100 * time.Millisecond
	}
	if d.Protocol == (protocol.VersionRange{}) {
		d.Protocol = protocol.VersionRange{Min: protocol.Version, Max: protocol.Version}
	}
	if d.Mu == "" {
		d.Mu = MuVersion
	}
	return d
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
