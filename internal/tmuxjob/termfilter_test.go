package tmuxjob

import (
	"bytes"
	"testing"
)

// The view's filter drops what acts on the viewer's terminal (a clipboard
// write, a title, a query it would answer as typed keys) and passes
// everything else byte for byte, however the output is split.
func TestTermFilter(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text\r\n", "plain text\r\n"},
		{"a\x1b]52;c;aGVsbG8=\x07b", "ab"},                         // OSC 52, BEL
		{"a\x1b]52;c;aGVsbG8=\x1b\\b", "ab"},                       // OSC 52, ST
		{"a\x1b]0;owned\x07\x1b]2;owned\x1b\\b", "ab"},             // titles
		{"a\x1bkscreen title\x1b\\b", "ab"},                        // screen's title
		{"a\x1bP$qm\x1b\\b\x1b_apc\x1b\\c", "abc"},                 // DECRQSS, APC
		{"a\x1b[c\x1b[>c\x1b[5n\x1b[6n\x1b[21t\x1b[8;1;1tb", "ab"}, // DA, DSR, window ops
		{"a\x1b[>q\x1b[?2004$p\x1b[?ub", "ab"},                     // XTVERSION, DECRQM, keyboard query
		{"\x1b[31mred\x1b[0m \x1b[2J\x1b[H\x1b[?25l\x1b[2 q", "\x1b[31mred\x1b[0m \x1b[2J\x1b[H\x1b[?25l\x1b[2 q"},
		{"\x1b(B\x1b7\x1b8é", "\x1b(B\x1b7\x1b8é"},
		{"a\x1b]52;c;unterminated", "a"},
	} {
		for _, split := range []int{1, 3, len(c.in)} {
			var out bytes.Buffer
			f := newTermFilter(&out)
			for i := 0; i < len(c.in); i += split {
				if _, err := f.Write([]byte(c.in[i:min(i+split, len(c.in))])); err != nil {
					t.Fatal(err)
				}
			}
			if out.String() != c.want {
				t.Errorf("%q in writes of %d: %q, want %q", c.in, split, out.String(), c.want)
			}
		}
	}
}
