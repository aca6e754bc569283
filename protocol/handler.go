package protocol

import (
	"bytes"
	"context"
	"encoding/json"
)

// Handler serves one method, its types erased (Method.Serve makes one). It
// returns the result (nil is JSON null) or an error, which ToWire maps. ctx ends at the call's deadline, its $/cancel,
// shutdown or stdin EOF.
type Handler func(ctx context.Context, call *Call) (any, error)

// Methods is a plugin's method table (Options.Handlers): each method name,
// as on the wire, to its Handler, made by the method's Serve (NewMethods,
// Add); a wrapper (a fault, a gate) may replace a Handler with one that
// calls it. A method it lacks is answered "method not found", permanent.
type Methods map[string]Handler

// Call is one inbound request as a handler sees it.
type Call struct {
	Method string
	Params json.RawMessage
	Base   Base // the decoded deadline and target

	id  string
	srv *server
}

// ID is the request's envelope id, as JSON text.
func (c *Call) ID() string { return c.id }

// Decode decodes the params into v, refusing unknown fields. A failure is a
// permanent error naming the method.
func (c *Call) Decode(v any) error {
	if len(c.Params) == 0 {
		return Errorf(Permanent, "%s: params are required", c.Method)
	}
	dec := json.NewDecoder(bytes.NewReader(c.Params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf(Permanent, "%s: invalid params: %v", c.Method, err)
	}
	return nil
}

// Watch registers a watch under watchID. Once this call's reply is on the
// wire, run is started with a context that ends at $/cancel {watchId},
// shutdown or EOF. When run returns a method ("watch/settled" or
// "watch/restarted") and its context is still live, exactly that one
// notification is sent. A watch lives only as long as this invocation.
func (c *Call) Watch(watchID string, run func(ctx context.Context) (method string, params any)) {
	c.srv.watch(c.id, watchID, run)
}
