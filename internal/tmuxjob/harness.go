package tmuxjob

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mu-org/mu-plugins/protocol"
)

// hstate is the harness's state file (docs/harness.md): one snapshot.
type hstate struct {
	Inc     string
	State   string
	Since   int64
	Runs    int64
	Cursor  int64
	Msg     string
	Pending string
}

func parseKV(b []byte) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		if _, dup := m[k]; !dup {
			m[k] = v
		}
	}
	return m
}

// parseState reads a state file; ok is false when it is not one a harness
// following the contract writes.
func parseState(b []byte) (hstate, bool) {
	m := parseKV(b)
	s := hstate{Inc: m["inc"], State: m["state"], Msg: m["msg"], Pending: m["pending"]}
	var err1, err2, err3 error
	s.Since, err1 = strconv.ParseInt(m["since"], 10, 64)
	s.Runs, err2 = strconv.ParseInt(m["runs"], 10, 64)
	if c := m["cursor"]; c != "" {
		s.Cursor, err3 = strconv.ParseInt(c, 10, 64)
	}
	switch s.State {
	case protocol.TurnIdle, protocol.TurnBusy, protocol.TurnBlocked:
	default:
		return s, false
	}
	if err1 != nil || err2 != nil || err3 != nil || s.Runs < 0 || s.Since < 0 || !validInc(s.Inc) {
		return s, false
	}
	return s, true
}

// turnRec is one settled turn's record: a header, a blank line, the text.
type turnRec struct {
	At    int64
	Msg   string
	Error string
	Text  string
	// Partial: only the record's head was read (turn.go), so Text is cut.
	Partial bool
}

func parseTurn(b []byte) (turnRec, bool) {
	head, text, ok := bytes.Cut(b, []byte("\n\n"))
	if !ok {
		if !bytes.HasSuffix(b, []byte("\n")) {
			return turnRec{}, false
		}
		head, text = b, nil
	}
	m := parseKV(append(head, '\n'))
	at, err := strconv.ParseInt(m["at"], 10, 64)
	if err != nil {
		return turnRec{}, false
	}
	return turnRec{At: at, Msg: m["msg"], Error: m["error"], Text: string(text)}, true
}

// cutText cuts s (at a rune boundary) so that its JSON encoding (as
// encoding/json writes it) is at most max bytes. Invalid UTF-8 is replaced
// first, as JSON would.
func cutText(s string, max int) (string, bool) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	n := 2 // the quotes
	for i, r := range s {
		n += jsonRuneLen(r)
		if n > max {
			return s[:i], true
		}
	}
	return s, false
}

// jsonRuneLen is how many bytes encoding/json writes for r in a string.
func jsonRuneLen(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return 6
	}
	return utf8.RuneLen(r)
}

// settledObs is the observation of a settled turn n.
func (j *Jobs) settledObs(inc string, n int64, t turnRec) protocol.Observation {
	text, cut := cutText(t.Text, j.opts.MaxSettleText)
	errText, _ := cutText(t.Error, 4096)
	return protocol.Observation{Status: protocol.TurnIdle, Settled: true, Since: t.At, Runs: n,
		Incarnation: inc, LastText: text, LastTextTruncated: cut || t.Partial, LastError: errText}
}

// currentObs is the turn now: the state, and the last settled turn's text
// when the agent is idle.
func (j *Jobs) currentObs(s hstate, last *turnRec) protocol.Observation {
	o := protocol.Observation{Status: s.State, Settled: s.State == protocol.TurnIdle, Since: s.Since,
		Runs: s.Runs, Incarnation: s.Inc}
	if s.State == protocol.TurnBlocked {
		o.Pending = s.Pending
	}
	if o.Settled && last != nil {
		t := j.settledObs(s.Inc, s.Runs, *last)
		o.LastText, o.LastTextTruncated, o.LastError = t.LastText, t.LastTextTruncated, t.LastError
	}
	return o
}
