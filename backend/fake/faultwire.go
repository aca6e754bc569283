package fake

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// faultWire is the fake's stdout, where the wire faults put their lines:
// Serve writes every message through it (protocol.Options.Out, one Write a
// message), and it passes each through as is but a reply a fault replaced.
// Only the fake has such hands on its wire: the protocol package offers no
// way to write around its own checks.
type faultWire struct {
	mu      sync.Mutex
	w       io.WriteCloser
	replace map[string][][]byte // a call's id (compact JSON) -> the lines written instead of its reply
}

func newFaultWire(w io.WriteCloser) *faultWire {
	return &faultWire{w: w, replace: map[string][][]byte{}}
}

// Write writes one message of Serve's (its line, newline included), or the
// lines a fault put in place of a reply.
func (fw *faultWire) Write(msg []byte) (int, error) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if len(fw.replace) > 0 {
		if id, ok := replyID(msg); ok && fw.replace[id] != nil {
			lines := fw.replace[id]
			delete(fw.replace, id)
			for _, l := range lines {
				if _, err := fw.w.Write(l); err != nil {
					return 0, err
				}
			}
			return len(msg), nil
		}
	}
	return fw.w.Write(msg)
}

// Close closes stdout.
func (fw *faultWire) Close() error { return fw.w.Close() }

// inject writes line (and a newline) at once, between Serve's messages:
// whatever this call answers comes after it.
func (fw *faultWire) inject(line []byte) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	_, _ = fw.w.Write(withNewline(line))
}

// replaceReply makes line (and a newline) the reply to the call whose id
// is id: the reply Serve writes for it never reaches the wire.
func (fw *faultWire) replaceReply(id string, line []byte) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.replace[compact(id)] = append(fw.replace[compact(id)], withNewline(line))
}

func withNewline(line []byte) []byte {
	return append(append(make([]byte, 0, len(line)+1), line...), '\n')
}

// replyID is the id of a reply (a message with an id and no method).
func replyID(msg []byte) (string, bool) {
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(msg, &env) != nil || len(env.ID) == 0 || env.Method != nil {
		return "", false
	}
	return compact(string(env.ID)), true
}

func compact(id string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(id)) != nil {
		return id
	}
	return b.String()
}
