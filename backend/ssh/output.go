package sshlink

import (
	"sync"
	"unicode/utf8"

	"github.com/mu-org/mu-plugins/protocol"
)

// replyBudget is what stdout and stderr may take in a reply once JSON
// escaped: the 1 MiB line minus room for the envelope and the other fields.
const replyBudget = protocol.MaxLine - 4096

// capture keeps the head of one output stream, at most limit bytes, and
// drains (counts, drops) the rest: memory stays flat however much a script
// prints.
type capture struct {
	mu    sync.Mutex
	buf   []byte
	limit int
	total int64
}

func newCapture(limit int) *capture { return &capture{limit: limit} }

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := c.limit - len(c.buf); room > 0 {
		if len(p) > room {
			c.buf = append(c.buf, p[:room]...)
		} else {
			c.buf = append(c.buf, p...)
		}
	}
	return len(p), nil
}

// snapshot copies what is kept so far, and whether anything was dropped.
func (c *capture) snapshot() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf...), c.total > int64(len(c.buf))
}

// escapedLen is the length of b as encoding/json writes it inside a string:
// an invalid byte becomes \ufffd (6 bytes), control and HTML characters are
// escaped too.
func escapedLen(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		n += runeEscLen(r, size)
		i += size
	}
	return n
}

func runeEscLen(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1:
		return 6
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return 6
	}
	return size
}

// cutEscaped returns the longest prefix of b, cut on a character boundary,
// whose escaped length is at most max.
func cutEscaped(b []byte, max int) []byte {
	n := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		e := runeEscLen(r, size)
		if n+e > max {
			return b[:i]
		}
		n += e
		i += size
	}
	return b
}

// fit shares the reply budget between stdout and stderr (each gets at least
// half when both are large; what one leaves, the other may take), keeping
// each stream's head. partial reports any cut.
func fit(out, errb []byte, cutOut, cutErr bool, budget int) (string, string, bool) {
	eo, ee := escapedLen(out), escapedLen(errb)
	partial := cutOut || cutErr
	if eo+ee > budget {
		partial = true
		half := budget / 2
		switch {
		case ee <= half:
			out = cutEscaped(out, budget-ee)
		case eo <= half:
			errb = cutEscaped(errb, budget-eo)
		default:
			out = cutEscaped(out, half)
			errb = cutEscaped(errb, budget-half)
		}
	}
	return string(out), string(errb), partial
}
