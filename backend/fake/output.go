package fake

import (
	"sync"
	"unicode/utf8"

	"github.com/mu-org/mu-plugins/protocol"
)

// replyBudget is what a run's stdout and stderr may take once JSON-escaped,
// so that the whole reply line stays within 1 MiB (the envelope, the id and
// the other fields get the rest).
const replyBudget = protocol.MaxLine - 4096

// capWriter keeps the first max bytes written to it and counts the rest, so
// a script's output never blocks on a full pipe and memory stays bounded.
type capWriter struct {
	mu   sync.Mutex
	max  int
	buf  []byte
	over bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.max - len(w.buf)
	if room >= len(p) {
		w.buf = append(w.buf, p...)
	} else {
		if room > 0 {
			w.buf = append(w.buf, p[:room]...)
		}
		w.over = true
	}
	return len(p), nil
}

func (w *capWriter) result() ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf, w.over
}

// escapedLen bounds the bytes encoding/json spends on one rune of s: a byte
// that is not UTF-8 becomes \ufffd (6 bytes), so binary output grows 6×.
func escapedLen(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1:
		return 6
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20, r == '<', r == '>', r == '&', r == '\u2028', r == '\u2029':
		return 6
	}
	return size
}

func escapedSize(s []byte) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRune(s[i:])
		n += escapedLen(r, size)
		i += size
	}
	return n
}

// prefixWithin is the longest prefix of s whose escaped size is at most max.
func prefixWithin(s []byte, max int) []byte {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRune(s[i:])
		n += escapedLen(r, size)
		if n > max {
			return s[:i]
		}
		i += size
	}
	return s
}

// fit cuts stdout and stderr so both, escaped, fit the reply budget; each
// gets half, and what one leaves unused goes to the other. cut reports
// whether anything was dropped.
func fit(out, errb []byte, budget int) (o, e []byte, cut bool) {
	so, se := escapedSize(out), escapedSize(errb)
	if so+se <= budget {
		return out, errb, false
	}
	half := budget / 2
	switch {
	case so <= half:
		return out, prefixWithin(errb, budget-so), true
	case se <= half:
		return prefixWithin(out, budget-se), errb, true
	}
	return prefixWithin(out, half), prefixWithin(errb, budget-half), true
}
