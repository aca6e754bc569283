package caller

import (
	"strings"
	"sync"
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

// Record keeps every event a Config.Transcript hook sees, for a later
// look (a test's checks, a report's excerpt): use its Add as the hook. It
// is safe for concurrent use.
type Record struct {
	mu     sync.Mutex
	events []Event
}

// Add keeps e.
func (r *Record) Add(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Events returns every event kept so far, in order.
func (r *Record) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Lines returns the lines of one direction, in order.
func (r *Record) Lines(d Direction) []string {
	var out []string
	for _, e := range r.Events() {
		if e.Dir == d && e.Line != nil {
			out = append(out, string(e.Line))
		}
	}
	return out
}

// Containing returns the lines of one direction that contain s.
func (r *Record) Containing(d Direction, s string) []string {
	var out []string
	for _, l := range r.Lines(d) {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}
