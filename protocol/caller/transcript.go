package caller

import (
	"strings"
	"time"
)

// Direction is a message's direction on the wire.
type Direction int

const (
	// Out is from mu (the caller) to the plugin, on its stdin.
	Out Direction = iota
	// In is from the plugin, on its stdout.
	In
)

func (d Direction) String() string {
	if d == In {
		return "in"
	}
	return "out"
}

// Event is one message on the wire, as Config.Transcript sees it. Events
// arrive in wire order per direction, and across directions in the order
// the caller wrote or read them: an outbound message is reported just
// before it is written, an inbound one as soon as it is read, before it is
// acted on.
type Event struct {
	Dir  Direction
	Time time.Time
	// Line is the message's exact bytes without the newline. It is nil for
	// an inbound line over 1 MiB (Oversize is set instead) and for a failed
	// write (Note says so). Do not modify it.
	Line     []byte
	Oversize bool
	Note     string
}

func (e Event) String() string {
	s := e.Dir.String() + " " + string(e.Line)
	if e.Oversize {
		s += "<line over 1 MiB>"
	}
	if e.Note != "" {
		s += " (" + e.Note + ")"
	}
	return s
}

func toValidUTF8(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }
