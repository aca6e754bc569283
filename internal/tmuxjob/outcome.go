package tmuxjob

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mu-org/mu-plugins/protocol"
)

// notDone is a script's word that it did nothing ("notdone KIND WHY", with
// an optional "remedy TEXT" line): the tmux it needs is missing, a
// delivery it could not write was rolled back. KIND is the spec's for what
// did not run: retryable, permanent or human.
type notDone struct {
	kind        protocol.Kind
	why, remedy string
}

func (e *notDone) Error() string { return e.why }

// notDoneOf is o's notdone line as an error, or nil.
func notDoneOf(o out) error {
	v, ok := o.vals["notdone"]
	if !ok {
		return nil
	}
	k, why, _ := strings.Cut(v, " ")
	kind := protocol.Kind(k)
	if !kind.Valid() || kind == protocol.UnknownOutcome {
		return nil
	}
	return &notDone{kind: kind, why: why, remedy: o.get("remedy")}
}

// outcomeOf is a run's error as an effect's answer: the kind of what did
// not run when the script said it did nothing (notDone), else
// unknown-outcome (it may have run).
func outcomeOf(err error, method string) error {
	var nd *notDone
	if errors.As(err, &nd) {
		return &protocol.Error{Kind: nd.kind, Message: method + ": " + nd.why + "; nothing was done", Remedy: nd.remedy, Err: err}
	}
	return protocol.Wrap(protocol.UnknownOutcome, err, method)
}

// field is one value a call passes the host as an argument, by its name in
// the call's params.
type field struct {
	name string
	v    string
}

// fieldsFit refuses, before anything runs, a call whose value is longer
// than one exec argument takes on the host (MaxArg), naming it: permanent,
// wrapping ErrTooLong.
func fieldsFit(method string, fs ...field) error {
	for _, f := range fs {
		if len(f.v) > MaxArg {
			return &protocol.Error{Kind: protocol.Permanent, Err: ErrTooLong, Message: fmt.Sprintf("%s: %s is %d bytes, over the %d bytes the host takes in one argument "+
				"(Linux's MAX_ARG_STRLEN, its NUL included); nothing was run", method, f.name, len(f.v), MaxArg)}
		}
	}
	return nil
}

// tooLongFor is the Runner's refusal pe (the run's command line passes
// what the host takes: nothing was run) as method's, naming the longest of
// fs, the value to shorten, and the size of each.
func tooLongFor(method string, pe *protocol.Error, fs ...field) error {
	big, sizes := fs[0], make([]string, 0, len(fs))
	for _, f := range fs {
		if len(f.v) > len(big.v) {
			big = f
		}
		sizes = append(sizes, fmt.Sprintf("%s %d", f.name, len(f.v)))
	}
	return &protocol.Error{Kind: protocol.Permanent, Err: pe, Message: fmt.Sprintf("%s: %s (%d bytes) is too long for this host (%s bytes): %s",
		method, big.name, len(big.v), strings.Join(sizes, ", "), pe.Message)}
}
