package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/creachadair/jrpc2"
)

// MaxLine is the largest message, in bytes without its newline, either side
// may send: 1 MiB.
const MaxLine = 1 << 20

// ErrLineTooLong is what ReadLine reports for a line past its cap; the
// reader has already skipped to the next line.
var ErrLineTooLong = errors.New("line exceeds 1 MiB")

// ReadLine reads one newline-terminated line of at most max bytes (the
// newline excluded) from r. A line past max is consumed whole and reported
// as ErrLineTooLong with no bytes, so memory stays bounded. A final line
// without a newline is returned whole, with io.EOF on the next call.
func ReadLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	over := false
	for {
		frag, err := r.ReadSlice('\n')
		content := frag
		if err == nil {
			content = frag[:len(frag)-1]
		}
		if !over {
			if len(line)+len(content) > max {
				over, line = true, nil
			} else {
				line = append(line, content...)
			}
		}
		switch {
		case err == nil:
			if over {
				return nil, ErrLineTooLong
			}
			if line == nil {
				line = []byte{}
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if over {
				return nil, ErrLineTooLong
			}
			if len(line) > 0 {
				return line, nil
			}
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

// lineChannel is the plugin side's jrpc2 channel: one JSON object per line,
// capped at MaxLine both ways, UTF-8 checked on the raw bytes, every error
// reply given a data.kind, and hooks run once a reply has been queued.
// Writes go through a queue (outQueue), so a stdout nobody reads never
// holds jrpc2.
type lineChannel struct {
	r   *bufio.Reader
	out *outQueue

	drained   chan struct{} // closed once input ended and replies drained
	drainOnce sync.Once

	mu      sync.Mutex
	methods map[string]string          // in-flight request id -> method
	after   map[string][]func(ok bool) // request id -> hooks to run after its reply
	// shutdown: a shutdown (request or notification) was read; every
	// request read after it is refused here and never runs.
	shutdown bool
}

func newLineChannel(r io.Reader, w io.WriteCloser) *lineChannel {
	return &lineChannel{
		r:       bufio.NewReaderSize(r, 64<<10),
		out:     newOutQueue(w),
		methods: make(map[string]string),
		drained: make(chan struct{}),
		after:   make(map[string][]func(ok bool)),
	}
}

// envelope is the part of a message the channel looks at.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// Recv returns the next valid-looking record. A line past the cap, one that
// is not UTF-8, a batch (a JSON array) and a request read after shutdown are
// answered here and skipped: jrpc2 never sees them.
func (c *lineChannel) Recv() ([]byte, error) {
	for {
		line, err := ReadLine(c.r, MaxLine)
		if errors.Is(err, ErrLineTooLong) {
			c.writeError(nil, Errorf(Permanent, "message exceeds 1 MiB"))
			continue
		}
		if err != nil {
			c.drainReplies(eofDrain)
			c.drainOnce.Do(func() { close(c.drained) })
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if bytes.TrimLeft(line, " \t\r\n")[0] == '[' {
			// jrpc2 would run each element and answer with an array.
			c.writeError(nil, &Error{Kind: Permanent, Code: jrpc2.InvalidRequest,
				Message: "a JSON array (a batch) is not one message: send one request per line"})
			continue
		}
		var env envelope
		_ = json.Unmarshal(line, &env) // invalid UTF-8 still decodes, replaced
		if !utf8.Valid(line) {
			c.writeError(env.ID, Errorf(Permanent, "message is not valid UTF-8"))
			continue
		}
		if c.afterShutdown(env) {
			c.writeError(env.ID, NotStarted(nil, "the plugin is shutting down: "+env.Method+" came after shutdown and was not run"))
			continue
		}
		if len(env.ID) > 0 && env.Method != "" {
			c.mu.Lock()
			c.methods[compactID(env.ID)] = env.Method
			c.mu.Unlock()
		}
		return line, nil
	}
}

// afterShutdown reports whether env is a request read after a shutdown,
// and records a shutdown. Notifications ($/cancel) still pass.
func (c *lineChannel) afterShutdown(env envelope) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shutdown {
		return len(env.ID) > 0 && string(env.ID) != "null" && env.Method != ""
	}
	if env.Method == MethodShutdown.Name {
		c.shutdown = true
	}
	return false
}

// eofDrain bounds how long the end of stdin waits for the replies to the
// requests already read before every call is cancelled: a quick call still
// answers, a slow one is cancelled after it.
const eofDrain = 500 * time.Millisecond

// drainReplies waits, at most d, until every request read has its reply on
// the wire, so that a request followed at once by EOF (a pipe, a script) is
// still answered. jrpc2 closes stdout as soon as Recv reports EOF.
func (c *lineChannel) drainReplies(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		c.mu.Lock()
		n := len(c.methods)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// compactID gives the id's text as jrpc2 keys it.
func compactID(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// onReply registers fn to run after the reply to id is written; ok tells
// whether the reply was a result (not an error).
func (c *lineChannel) onReply(id string, fn func(ok bool)) {
	c.mu.Lock()
	c.after[id] = append(c.after[id], fn)
	c.mu.Unlock()
}

// Send queues one record. An error reply without data.kind gets one; a
// record past the cap is replaced by an error reply for the same id.
func (c *lineChannel) Send(rec []byte) error {
	id, field := peekReply(rec)
	var method string
	var hooks []func(ok bool)
	if id != "" {
		c.mu.Lock()
		method = c.methods[id]
		delete(c.methods, id)
		hooks = c.after[id]
		delete(c.after, id)
		c.mu.Unlock()
	}
	if field == "error" {
		rec = ensureKind(rec)
	}
	if len(rec) > MaxLine {
		if id == "" {
			return fmt.Errorf("outgoing message of %d bytes exceeds 1 MiB", len(rec))
		}
		// The call ran: for an effect or a run, what it did is lost with
		// its reply.
		k := Permanent
		if mayHaveHappened(method) {
			k = UnknownOutcome
		}
		rec, field = errorLine(json.RawMessage(id), Errorf(k, "reply exceeds 1 MiB")), "error"
	}
	err := c.write(rec)
	ok := err == nil && field == "result" && len(rec) > 0
	for _, fn := range hooks {
		go fn(ok)
	}
	return err
}

// write queues rec and its newline; it fails once the channel is closed.
func (c *lineChannel) write(rec []byte) error {
	buf := make([]byte, 0, len(rec)+1)
	return c.out.put(append(append(buf, rec...), '\n'))
}

// writeError answers a message jrpc2 never sees; nothing happened, so the
// error's kind stands whatever the method.
func (c *lineChannel) writeError(id json.RawMessage, e *Error) {
	_ = c.write(errorLine(id, e))
}

// Close takes no more records; what is queued is still written, then the
// writer is closed (flushed). Further Sends fail.
func (c *lineChannel) Close() error {
	c.out.close()
	return nil
}

// flushed is closed once every queued record was written (or dropped on a
// write error) and the writer closed.
func (c *lineChannel) flushed() <-chan struct{} { return c.out.done }

// errorLine renders a complete error reply. A missing id is null.
func errorLine(id json.RawMessage, e *Error) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	msg := struct {
		V  string          `json:"jsonrpc"`
		ID json.RawMessage `json:"id"`
		E  *jrpc2.Error    `json:"error"`
	}{"2.0", id, ToWire(e, "")}
	b, _ := json.Marshal(msg)
	return b
}

// peekReply reads a jrpc2-written message's id and its third key ("result",
// "error", "method" or "params") without decoding the rest: jrpc2 always
// writes jsonrpc, then id, then the payload. The form jrpc2 writes (see
// peekFast) is read off the bytes; anything else goes through a JSON
// decoder, with the same answer.
func peekReply(rec []byte) (id, field string) {
	if id, field, ok := peekFast(rec); ok {
		return id, field
	}
	return peekDecode(rec)
}

// jrpc2's prefix of every message it writes (jmessage.toJSON).
const (
	peekHead   = `{"jsonrpc":"2.0"`
	peekID     = `,"id":`
	peekMethod = `,"method":`
)

// peekFast reads the message as jrpc2 writes it: the head, then either a
// method (a notification) or an id that is an integer, null or a string
// without escapes, followed by "result" or "error". ok is false for any
// other form; it never guesses.
func peekFast(rec []byte) (id, field string, ok bool) {
	rest, ok := bytes.CutPrefix(rec, []byte(peekHead))
	if !ok {
		return "", "", false
	}
	if bytes.HasPrefix(rest, []byte(peekMethod)) {
		return "", "method", true
	}
	rest, ok = bytes.CutPrefix(rest, []byte(peekID))
	if !ok {
		return "", "", false
	}
	n := simpleIDLen(rest)
	if n == 0 {
		return "", "", false
	}
	id, rest = string(rest[:n]), rest[n:]
	for _, f := range []string{"result", "error"} {
		if len(rest) > len(f)+3 && rest[0] == ',' && rest[1] == '"' &&
			string(rest[2:2+len(f)]) == f && rest[2+len(f)] == '"' && rest[3+len(f)] == ':' {
			return id, f, true
		}
	}
	return "", "", false
}

// simpleIDLen is the length of the id at the start of b when it is an
// integer without leading zeros, null, or a string of printable ASCII
// without a backslash or a quote inside (each its own compact form), and
// 0 for anything else.
func simpleIDLen(b []byte) int {
	switch {
	case len(b) == 0:
		return 0
	case bytes.HasPrefix(b, []byte("null")):
		return 4
	case b[0] == '"':
		for i := 1; i < len(b); i++ {
			switch c := b[i]; {
			case c == '"':
				return i + 1
			case c == '\\' || c < 0x20 || c >= 0x7f:
				return 0
			}
		}
		return 0
	}
	i := 0
	if b[0] == '-' {
		i++
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == start || (b[start] == '0' && i > start+1) {
		return 0
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0 // not an integer: leave it to the decoder
	}
	return i
}

// peekDecode is peekReply through a JSON decoder, for any form.
func peekDecode(rec []byte) (id, field string) {
	dec := json.NewDecoder(bytes.NewReader(rec))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", ""
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return id, field
		}
		key, _ := t.(string)
		switch key {
		case "id":
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return id, field
			}
			id = compactID(raw)
		case "result", "error", "method":
			return id, key
		default:
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return id, field
			}
		}
	}
	return id, field
}

// ensureKind gives an error reply a valid data.kind when it has none
// (jrpc2's own errors: parse failures, calls cancelled before their handler
// ran and the like; see kindForCode).
func ensureKind(rec []byte) []byte {
	var msg struct {
		V  string          `json:"jsonrpc"`
		ID json.RawMessage `json:"id"`
		E  struct {
			Code    jrpc2.Code      `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data,omitempty"`
		} `json:"error"`
	}
	if json.Unmarshal(rec, &msg) != nil {
		return rec
	}
	var data ErrorData
	if len(msg.E.Data) > 0 && json.Unmarshal(msg.E.Data, &data) == nil && data.Kind.Valid() {
		return rec
	}
	k := kindForCode(msg.E.Code)
	m := msg.E.Message
	if m == "" {
		m = msg.E.Code.String()
	}
	out := struct {
		V  string          `json:"jsonrpc"`
		ID json.RawMessage `json:"id"`
		E  *jrpc2.Error    `json:"error"`
	}{"2.0", msg.ID, ToWire(&Error{Kind: k, Message: m, Code: msg.E.Code}, "")}
	if len(out.ID) == 0 {
		out.ID = json.RawMessage("null")
	}
	b, _ := json.Marshal(out)
	return b
}
