package docker

import (
	"unicode/utf8"
)

// maxStream is the most of one stream a run keeps before fitting.
const maxStream = 1 << 20

// replyBudget is what stdout and stderr may take, JSON-escaped, in one reply:
// the spec caps a message at 1 MiB; the rest is room for the envelope.
const replyBudget = 1<<20 - 16<<10

// fitOutput makes a run's output safe for the wire: invalid UTF-8 becomes
// U+FFFD (one per byte) and both streams are cut, at rune boundaries, so
// that their JSON-escaped form fits replyBudget (a control byte or one of
// <>& grows sixfold when escaped). cut reports a cut.
func fitOutput(out, errb []byte, budget int) (stdout, stderr string, cut bool) {
	o, e := validUTF8(out), validUTF8(errb)
	lo, le := escapedLen(o), escapedLen(e)
	if lo+le <= budget {
		return o, e, false
	}
	bo, be := budget/2, budget-budget/2
	switch {
	case lo <= bo:
		be = budget - lo
	case le <= be:
		bo = budget - le
	}
	return cutEscaped(o, bo), cutEscaped(e, be), true
}

// validUTF8 replaces each invalid byte with U+FFFD.
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]rune, 0, len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		out = append(out, r) // RuneError for an invalid byte, n == 1
		b = b[n:]
	}
	return string(out)
}

// runeEscapedLen bounds how many bytes encoding/json writes for r.
func runeEscapedLen(r rune) int {
	switch {
	case r == '"' || r == '\\':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029 || r == 0x7f:
		return 6
	default:
		return utf8.RuneLen(r)
	}
}

func escapedLen(s string) int {
	n := 0
	for _, r := range s {
		n += runeEscapedLen(r)
	}
	return n
}

// cutEscaped keeps the longest prefix of s whose escaped length fits b.
func cutEscaped(s string, b int) string {
	n := 0
	for i, r := range s {
		n += runeEscapedLen(r)
		if n > b {
			return s[:i]
		}
	}
	return s
}
