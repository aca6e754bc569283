package protocol

import (
	"bytes"
	"context"
	"encoding/json"
)

// Handler serves one method. It returns the result (nil is JSON null) or an
// error, which ToWire maps. ctx ends at the call's deadline, its $/cancel,
// shutdown or stdin EOF.
type Handler func(ctx context.Context, call *Call) (any, error)

// Methods is a plugin's method table (Options.Handlers): each method name,
// as on the wire, to its Handler. A method it lacks is answered "method not
// found", permanent.
type Methods map[string]Handler

// Handle makes fn a Handler: the call's params are decoded into a P, unknown
// fields refused (Call.Decode: a failure is a permanent error naming the
// method, and fn does not run), and fn gets them beside the call. It is the
// one way a backend writes a handler, so a method table reads
//
//	protocol.Methods{protocol.MethodLinkExec: protocol.Handle(b.exec), …}
//
// with b.exec a func(ctx, *protocol.Call, protocol.ExecParams) (any, error).
// The caller's side mirrors it with protocol/caller's Invoke.
func Handle[P any](fn func(ctx context.Context, c *Call, p P) (any, error)) Handler {
	return func(ctx context.Context, c *Call) (any, error) {
		var p P
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		return fn(ctx, c, p)
	}
}

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
