package schemacheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mu-org/mu-plugins/internal/testutil/words"
)

// op edits a decoded JSON document at a JSON pointer.
type op struct {
	ptr   string
	del   bool // delete the member (an object key or array item)
	value any  // else set it to value (a Go value, marshalled)
}

func set(ptr string, v any) op { return op{ptr: ptr, value: v} }
func del(ptr string) op        { return op{ptr: ptr, del: true} }

// raw is a value written into the document as JSON text.
type raw string

func apply(doc json.RawMessage, ops ...op) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		panic(err)
	}
	for _, o := range ops {
		v = edit(v, tokens(o.ptr), o)
	}
	return json.RawMessage(words.JSON(v))
}

func tokens(ptr string) []string {
	if ptr == "" {
		return nil
	}
	if !strings.HasPrefix(ptr, "/") {
		panic("bad pointer " + ptr)
	}
	ts := strings.Split(ptr[1:], "/")
	for i, t := range ts {
		ts[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return ts
}

func value(v any) any {
	if r, ok := v.(raw); ok {
		return json.RawMessage(r)
	}
	return v
}

func edit(v any, ts []string, o op) any {
	if len(ts) == 0 {
		return value(o.value)
	}
	switch x := v.(type) {
	case map[string]any:
		if len(ts) == 1 {
			if o.del {
				if _, ok := x[ts[0]]; !ok {
					panic(fmt.Sprintf("delete %s: no such member", o.ptr))
				}
				delete(x, ts[0])
			} else {
				x[ts[0]] = value(o.value)
			}
			return x
		}
		c, ok := x[ts[0]]
		if !ok {
			panic(fmt.Sprintf("%s: no member %q", o.ptr, ts[0]))
		}
		x[ts[0]] = edit(c, ts[1:], o)
		return x
	case []any:
		i, err := strconv.Atoi(ts[0])
		if err != nil || i >= len(x) {
			panic(fmt.Sprintf("%s: bad index %q", o.ptr, ts[0]))
		}
		if len(ts) == 1 && o.del {
			return append(x[:i], x[i+1:]...)
		}
		x[i] = edit(x[i], ts[1:], o)
		return x
	}
	panic(fmt.Sprintf("%s: cannot descend into %T", o.ptr, v))
}
