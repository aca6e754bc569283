// Package outcap keeps a run's output within what one reply may carry: a
// bounded capture of each stream (memory stays flat however much a script
// prints) and a fit of stdout and stderr into the reply's budget measured
// as encoding/json escapes them (an invalid byte becomes \ufffd: 6 bytes).
// Every link in this project (fake, ssh, docker) answers through it.
package outcap

import (
	"sync"
	"unicode/utf8"

	"github.com/mu-org/mu-plugins/protocol"
)

// ReplyBudget is what stdout and stderr may take in a reply once escaped:
// the 1 MiB line less room for the envelope and the other fields.
const ReplyBudget = protocol.MaxLine - 4096

// MaxStream is the most of one stream a run keeps (a Capture's limit for
// a link's run); Fit then fits both streams into the reply.
const MaxStream = 1 << 20

// Capture keeps the head of one stream, at most Limit bytes, and counts the
// rest. It never blocks the writer. Safe for concurrent use.
type Capture struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	total int64
}

// New returns a Capture keeping at most limit bytes.
func New(limit int) *Capture { return &Capture{limit: limit} }

func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := c.limit - len(c.buf); room > 0 {
		if n > room {
			p = p[:room]
		}
		c.buf = append(c.buf, p...)
	}
	return n, nil
}

// Bytes returns a copy of what was kept, and whether anything was dropped.
func (c *Capture) Bytes() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf...), c.total > int64(len(c.buf))
}

// Kept returns a copy of what was kept.
func (c *Capture) Kept() []byte {
	b, _ := c.Bytes()
	return b
}

// Total is how many bytes were written.
func (c *Capture) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// runeLen is what encoding/json writes for one rune inside a string.
func runeLen(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1:
		return 6 // \ufffd
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
		return 2
	case r < 0x20, r == '<', r == '>', r == '&', r == '\u2028', r == '\u2029':
		return 6
	}
	return size
}

// EscapedLen is len(b) as encoding/json writes it inside a string.
func EscapedLen(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		n += runeLen(r, size)
		i += size
	}
	return n
}

// CutEscaped is the longest prefix of b, cut at a rune boundary, whose
// escaped length is at most max.
func CutEscaped(b []byte, max int) []byte {
	n := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		n += runeLen(r, size)
		if n > max {
			return b[:i]
		}
		i += size
	}
	return b
}

// Fit shares budget between stdout and stderr, escaped: each gets at least
// half when both are large, and what one leaves the other may take; each
// keeps its head. partial is true when anything was cut here or dropped
// before (dropped).
func Fit(out, errb []byte, dropped bool, budget int) (stdout, stderr string, partial bool) {
	eo, ee := EscapedLen(out), EscapedLen(errb)
	partial = dropped
	if eo+ee > budget {
		partial = true
		half := budget / 2
		switch {
		case ee <= half:
			out = CutEscaped(out, budget-ee)
		case eo <= half:
			errb = CutEscaped(errb, budget-eo)
		default:
			out = CutEscaped(out, half)
			errb = CutEscaped(errb, budget-half)
		}
	}
	return string(out), string(errb), partial
}
