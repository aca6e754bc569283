package tmuxjob

import "io"

// termFilter passes a job's terminal output to the viewer's terminal as a
// terminal multiplexer would: without what acts on the viewer's own
// terminal rather than draws in it. Dropped whole:
//   - OSC (ESC ]: a clipboard write, OSC 52; a window or icon title; a
//     colour set or query; a hyperlink), DCS (ESC P: queries such as
//     DECRQSS, a multiplexer's passthrough), APC, PM, SOS (ESC _ ^ X) and
//     screen's title (ESC k), each up to its BEL or ST (ESC \);
//   - CSI sequences the terminal answers on its input, which a person's
//     shell or mu would read as typed keys, or that act on its window:
//     device attributes (final c), status reports (n), window operations
//     and reports (t, the title's report among them), XTVERSION (CSI > q),
//     mode reports (DECRQM, CSI … $ p) and keyboard protocol queries
//     (CSI ? u).
//
// Everything else (text, colours, cursor moves, other escapes) passes
// byte for byte. Sequences may be split across writes.
type termFilter struct {
	w     io.Writer
	state int
	csi   []byte
}

const (
	tfGround = iota
	tfEsc    // after ESC
	tfCSI    // inside ESC [ …
	tfStr    // inside a dropped string, up to BEL or ST
	tfStrEsc // an ESC inside a dropped string
)

// maxCSI bounds a CSI sequence held while it is read: a longer one is not
// a terminal's, and is dropped.
const maxCSI = 256

func newTermFilter(w io.Writer) *termFilter { return &termFilter{w: w} }

func (f *termFilter) Write(p []byte) (int, error) {
	out := make([]byte, 0, len(p))
	for _, b := range p {
		out = f.step(out, b)
	}
	if len(out) > 0 {
		if _, err := f.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// step reads one byte, appending what passes to out.
func (f *termFilter) step(out []byte, b byte) []byte {
	switch f.state {
	case tfEsc:
		switch b {
		case ']', 'P', '_', '^', 'X', 'k':
			f.state = tfStr
		case '[':
			f.state, f.csi = tfCSI, append(f.csi[:0], 0x1b, '[')
		case 0x1b:
			out = append(out, 0x1b)
		default:
			f.state = tfGround
			out = append(out, 0x1b, b)
		}
	case tfCSI:
		switch {
		case b == 0x1b:
			f.state = tfEsc
		case b == 0x18 || b == 0x1a: // CAN, SUB: the sequence is cancelled
			f.state = tfGround
		case len(f.csi) >= maxCSI:
			f.state = tfStr // drop the rest up to a terminator
		case b >= 0x40 && b <= 0x7e:
			f.state = tfGround
			if seq := append(f.csi, b); !csiQuery(seq) {
				out = append(out, seq...)
			}
		default:
			f.csi = append(f.csi, b)
		}
	case tfStr:
		switch b {
		case 0x07, 0x18, 0x1a:
			f.state = tfGround
		case 0x1b:
			f.state = tfStrEsc
		}
	case tfStrEsc:
		if b == '\\' {
			f.state = tfGround
		} else {
			f.state = tfEsc
			out = f.step(out, b)
		}
	default:
		if b == 0x1b {
			f.state = tfEsc
		} else {
			out = append(out, b)
		}
	}
	return out
}

// csiQuery is a whole CSI sequence (ESC [ params intermediates final) that
// the terminal answers, or that acts on its window.
func csiQuery(seq []byte) bool {
	body, final := seq[2:len(seq)-1], seq[len(seq)-1]
	prefix := byte(0)
	if len(body) > 0 && body[0] >= 0x3c && body[0] <= 0x3f { // < = > ?
		prefix = body[0]
	}
	inter := byte(0)
	if n := len(body); n > 0 && body[n-1] >= 0x20 && body[n-1] <= 0x2f {
		inter = body[n-1]
	}
	switch final {
	case 'c', 'n', 't':
		return true
	case 'q':
		return prefix == '>'
	case 'p':
		return inter == '$'
	case 'u':
		return prefix == '?'
	}
	return false
}
