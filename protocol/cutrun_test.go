package protocol_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mu-org/mu-plugins/protocol"
)

// The cut-run rule, on the wire: a link.exec, link.fetch or link.push cut
// by $/cancel after its handler began answers unknown-outcome whatever its
// backend returned (a bare context error, a retryable, a wrapped one), unless
// the backend built its error with NotStarted. A read cut the same way is
// retryable: nothing happened.
func TestCutRunRule(t *testing.T) {
	started := make(chan struct{}, 1)
	cutWith := func(mk func(ctx context.Context) error) protocol.Handler {
		return func(ctx context.Context, c *protocol.Call) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, mk(ctx)
		}
	}
	var ret func(ctx context.Context) error
	h := cutWith(func(ctx context.Context) error { return ret(ctx) })
	s := serve(t, map[string]protocol.Handler{protocol.MethodLinkExec.Name: h, protocol.MethodLinkFetch.Name: h, protocol.MethodLinkPush.Name: h, protocol.MethodHostStatus.Name: h})
	s.init()
	cases := []struct {
		method, why string
		ret         func(ctx context.Context) error
		want        string
	}{
		{protocol.MethodLinkExec.Name, "bare context error", func(ctx context.Context) error { return ctx.Err() },
			`{"code":-32004,"message":"context canceled","data":{"kind":"unknown-outcome"}}`},
		{protocol.MethodLinkFetch.Name, "retryable chosen by the backend", func(context.Context) error { return protocol.Errorf(protocol.Retryable, "git stopped") },
			`{"code":-32004,"message":"git stopped","data":{"kind":"unknown-outcome"}}`},
		{protocol.MethodLinkPush.Name, "retryable wrapping the context error", func(ctx context.Context) error { return protocol.Wrap(protocol.Retryable, ctx.Err(), "push") },
			`{"code":-32004,"message":"push: context canceled","data":{"kind":"unknown-outcome"}}`},
		{protocol.MethodLinkExec.Name, "permanent chosen by the backend", func(context.Context) error { return protocol.Errorf(protocol.Permanent, "gone") },
			`{"code":-32004,"message":"gone","data":{"kind":"unknown-outcome"}}`},
		{protocol.MethodLinkExec.Name, "NotStarted", func(ctx context.Context) error { return protocol.NotStarted(ctx.Err(), "no session opened") },
			`{"code":-32001,"message":"no session opened: context canceled","data":{"kind":"retryable"}}`},
		{protocol.MethodHostStatus.Name, "a read", func(ctx context.Context) error { return ctx.Err() },
			`{"code":-32001,"message":"context canceled","data":{"kind":"retryable"}}`},
	}
	for i, c := range cases {
		ret = c.ret
		id := fmt.Sprint(100 + i)
		s.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + c.method + `","params":{` + base + `}}`)
		<-started
		s.Send(`{"jsonrpc":"2.0","method":"$/cancel","params":{"id":` + id + `}}`)
		if got, want := s.Recv(), `{"jsonrpc":"2.0","id":`+id+`,"error":`+c.want+`}`; got != want {
			t.Errorf("%s, %s:\ngot  %s\nwant %s", c.method, c.why, got, want)
		}
	}
}
