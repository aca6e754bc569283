package caller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mu-org/mu-plugins/protocol"
)

// Request is one logical call: its params marshalled once. Every Send of
// the same Request writes byte-identical params except deadline, under a
// fresh envelope id (the spec's "identical params on resend").
type Request struct {
	Method string
	// pre and post surround the deadline's value in the params.
	pre, post []byte
	// raw is the whole params when the method carries no deadline
	// (initialize).
	raw       []byte
	timeoutMs int64 // link.exec/fetch/push: the params' timeoutMs
	checked   bool  // the params passed the schema once
}

// NewRequest marshals params (a struct, a map or JSON bytes) once. They
// must be a JSON object; its "deadline" is filled in at each send (added
// first when absent). The params are never logged.
func NewRequest(method string, params any) (*Request, error) {
	b, err := marshalParams(params)
	if err != nil {
		return nil, fmt.Errorf("%s: params: %w", method, err)
	}
	r := &Request{Method: method}
	if err := r.split(b); err != nil {
		return nil, fmt.Errorf("%s: params: %w", method, err)
	}
	if protocol.IsRun(method) {
		var t struct {
			TimeoutMs int64 `json:"timeoutMs"`
		}
		_ = json.Unmarshal(b, &t)
		r.timeoutMs = t.TimeoutMs
	}
	return r, nil
}

// rawRequest is a request whose params carry no deadline (initialize).
func rawRequest(method string, params any) (*Request, error) {
	b, err := marshalParams(params)
	if err != nil {
		return nil, err
	}
	return &Request{Method: method, raw: b}, nil
}

func marshalParams(params any) ([]byte, error) {
	var b []byte
	switch v := params.(type) {
	case json.RawMessage:
		b = v
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(params); err != nil {
			return nil, err
		}
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		return nil, err
	}
	if c.Len() == 0 || c.Bytes()[0] != '{' {
		return nil, fmt.Errorf("params must be a JSON object")
	}
	return c.Bytes(), nil
}

// split finds the top-level deadline in compact JSON object b.
func (r *Request) split(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	seen := map[string]bool{}
	found := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		if seen[key] {
			return fmt.Errorf("key %q appears twice", key)
		}
		seen[key] = true
		start := int(dec.InputOffset()) + 1 // past the colon: b is compact
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
		if key == "deadline" {
			end := int(dec.InputOffset())
			r.pre = append([]byte(nil), b[:start]...)
			r.post = append([]byte(nil), b[end:]...)
			found = true
		}
	}
	if found {
		return nil
	}
	r.pre = []byte(`{"deadline":`)
	if len(b) == 2 { // {}
		r.post = []byte(`}`)
	} else {
		r.post = append([]byte(`,`), b[1:]...)
	}
	return nil
}

// Params renders the params with the given deadline (epoch ms).
func (r *Request) Params(deadline int64) json.RawMessage {
	if r.raw != nil {
		return r.raw
	}
	out := make([]byte, 0, len(r.pre)+len(r.post)+16)
	out = append(out, r.pre...)
	out = strconv.AppendInt(out, deadline, 10)
	return append(out, r.post...)
}

// Line renders the whole request line, with envelope id id and the
// deadline (epoch ms): what Send writes, for a Raw.
func (r *Request) Line(id, deadline int64) []byte {
	m, _ := marshalString(r.Method)
	params := r.Params(deadline)
	out := make([]byte, 0, len(params)+len(m)+48)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = strconv.AppendInt(out, id, 10)
	out = append(out, `,"method":`...)
	out = append(out, m...)
	out = append(out, `,"params":`...)
	out = append(out, params...)
	return append(out, '}')
}

func marshalString(s string) (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}
