// Package schemacheck validates protocol messages against the embedded JSON
// Schema (schemas.V1) with a real JSON Schema 2020-12 validator.
//
// The schema names each method's params "$defs/<method>.params" and its
// result "$defs/<method>.result", the notifications' params
// "$defs/<notification>.params", the error object "$defs/error" and the
// envelope "$defs/message". The schema is compiled once, on first use.
//
// Every error is one line naming the JSON pointer and the problem, e.g.
//
//	link.exec result: at "/exitCode": got string, want integer or null
package schemacheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mu-org/mu-plugins/schemas"
)

// Params validates a request's params for method (a method mu sends:
// initialize, shutdown, $/cancel and every host.*, link.*, job.* and
// channel.* call). Empty params mean absent: only shutdown takes none.
func Params(method string, params json.RawMessage) error {
	c, err := load()
	if err != nil {
		return err
	}
	sch, ok := c.params[method]
	if !ok {
		return unknownMethod(method, "params")
	}
	return check(sch, method+" params", params)
}

// Result validates a success reply's result for method. Empty means the
// reply carried no result, which is always an error: an absent result is
// written null.
func Result(method string, result json.RawMessage) error {
	c, err := load()
	if err != nil {
		return err
	}
	sch, ok := c.results[method]
	if !ok {
		return unknownMethod(method, "result")
	}
	if len(result) == 0 {
		return fmt.Errorf("%s result: missing (an absent result is written null)", method)
	}
	return check(sch, method+" result", result)
}

// Notification validates a plugin's notification: only watch/settled and
// watch/restarted are valid.
func Notification(method string, params json.RawMessage) error {
	c, err := load()
	if err != nil {
		return err
	}
	sch, ok := c.notes[method]
	if !ok {
		return fmt.Errorf("notification %q: a plugin sends only %s", method, strings.Join(c.noteNames, " and "))
	}
	return check(sch, method+" params", params)
}

// ErrorObject validates an error reply's "error" member: code, message and
// data.kind (one of the four kinds), with data.remedy for a human error.
func ErrorObject(errObj json.RawMessage) error {
	c, err := load()
	if err != nil {
		return err
	}
	return check(c.errObj, "error", errObj)
}

// Declaration validates an initialize result: the same as
// Result("initialize", result). It checks the schema only; the load rules
// are protocol.ValidateDeclaration's.
func Declaration(result json.RawMessage) error {
	return Result("initialize", result)
}

// Message validates one whole line from a plugin as a JSON-RPC 2.0 envelope:
// valid UTF-8, one JSON object, jsonrpc "2.0", and exactly one of a request,
// a notification, a success reply (result present) or an error reply (its
// error object checked in full), with no unknown member. It does not check
// params or result against a method (Params, Result, Notification do), nor
// who may send what: a request is a valid envelope, which mu then refuses
// from a plugin by its own rule. A trailing newline is allowed.
func Message(line []byte) error {
	c, err := load()
	if err != nil {
		return err
	}
	if !utf8.Valid(line) {
		return fmt.Errorf("message: not valid UTF-8")
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return fmt.Errorf("message: empty line")
	}
	return check(c.message, "message", line)
}

// Known reports whether method is one mu sends (a request, or $/cancel)
// with a params definition in the schema. The two notifications a plugin
// sends are not methods in this sense: see Notification.
func Known(method string) bool {
	c, err := load()
	if err != nil {
		return false
	}
	_, ok := c.params[method]
	return ok
}

// methods lists the methods Known reports, sorted.
func methods() []string {
	c, err := load()
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(c.params))
	for m := range c.params {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

func unknownMethod(method, what string) error {
	return fmt.Errorf("%s %s: unknown method %q (the schema defines no %s for it)", method, what, method, what)
}

// checker holds the compiled definitions.
type checker struct {
	params    map[string]*jsonschema.Schema
	results   map[string]*jsonschema.Schema
	notes     map[string]*jsonschema.Schema
	noteNames []string
	errObj    *jsonschema.Schema
	message   *jsonschema.Schema
}

var (
	once     sync.Once
	compiled *checker
	loadErr  error
)

func load() (*checker, error) {
	once.Do(func() { compiled, loadErr = compile(schemas.V1) })
	return compiled, loadErr
}

// resource is the URL the schema is registered under. It is independent of
// the file's $id, so replacing the file does not change how it is addressed.
const resource = "file:///schemas/plugin-protocol-v1.json"

// notifications are the only methods a plugin may send.
var notifications = []string{"watch/restarted", "watch/settled"}

// compile compiles every definition the API addresses from doc, the schema's
// bytes.
func compile(doc []byte) (*checker, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("schemacheck: the schema is not JSON: %w", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schemacheck: the schema is not an object")
	}
	defs, _ := root["$defs"].(map[string]any)
	c := jsonschema.NewCompiler()
	if err := c.AddResource(resource, v); err != nil {
		return nil, fmt.Errorf("schemacheck: %w", err)
	}
	get := func(name string) (*jsonschema.Schema, error) {
		s, err := c.Compile(resource + "#/$defs/" + escape(name))
		if err != nil {
			return nil, fmt.Errorf("schemacheck: compiling $defs/%s: %w", name, err)
		}
		return s, nil
	}
	k := &checker{
		params:    map[string]*jsonschema.Schema{},
		results:   map[string]*jsonschema.Schema{},
		notes:     map[string]*jsonschema.Schema{},
		noteNames: notifications,
	}
	isNote := map[string]bool{}
	for _, n := range notifications {
		isNote[n] = true
	}
	for name := range defs {
		var (
			m   string
			dst map[string]*jsonschema.Schema
		)
		switch {
		case strings.HasSuffix(name, ".params"):
			m = strings.TrimSuffix(name, ".params")
			dst = k.params
			if isNote[m] {
				dst = k.notes
			}
		case strings.HasSuffix(name, ".result"):
			m, dst = strings.TrimSuffix(name, ".result"), k.results
		default:
			continue
		}
		s, err := get(name)
		if err != nil {
			return nil, err
		}
		dst[m] = s
	}
	for _, n := range notifications {
		if k.notes[n] == nil {
			return nil, fmt.Errorf("schemacheck: the schema defines no $defs/%s.params", n)
		}
	}
	if k.errObj, err = get("error"); err != nil {
		return nil, err
	}
	if k.message, err = get("message"); err != nil {
		return nil, err
	}
	return k, nil
}

// escape makes name one JSON pointer token.
func escape(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// check decodes raw (empty means JSON null) and validates it against sch.
func check(sch *jsonschema.Schema, what string, raw []byte) error {
	if len(raw) == 0 {
		raw = []byte("null")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("%s: not valid JSON: %v", what, err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("%s: %s", what, describe(err))
	}
	return nil
}
