package protocol_test

import (
	"context"
	"testing"

	"github.com/mu-org/mu-plugins/protocol"
)

// RawWrite puts an extra line on the wire before the reply; RawReply
// replaces the reply, and the handler's own result is never written.
func TestRawWriteAndRawReply(t *testing.T) {
	s := serve(t, map[string]protocol.Handler{
		"link.exec": func(ctx context.Context, c *protocol.Call) (any, error) {
			if err := c.RawWrite([]byte("not json")); err != nil {
				return nil, err
			}
			return "real", nil
		},
		"link.fetch": func(ctx context.Context, c *protocol.Call) (any, error) {
			if err := c.RawReply([]byte(`{"jsonrpc":"2.0","id":` + c.ID() + `,"result":"raw"}`)); err != nil {
				return nil, err
			}
			return "dropped", nil
		},
	})
	s.init()
	s.Send(`{"jsonrpc":"2.0","id":2,"method":"link.exec","params":{"deadline":0,"target":{"host":{"name":"h"}}}}`)
	s.Expect("not json")
	s.Expect(`{"jsonrpc":"2.0","id":2,"result":"real"}`)
	s.Send(`{"jsonrpc":"2.0","id":"x","method":"link.fetch","params":{"deadline":0,"target":{"host":{"name":"h"}}}}`)
	s.Expect(`{"jsonrpc":"2.0","id":"x","result":"raw"}`)
	// The next line is the next call's reply: the dropped one never came.
	s.Send(`{"jsonrpc":"2.0","id":4,"method":"link.exec","params":{"deadline":0,"target":{"host":{"name":"h"}}}}`)
	s.Expect("not json")
	s.Expect(`{"jsonrpc":"2.0","id":4,"result":"real"}`)
}
