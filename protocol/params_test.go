package protocol_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// Params that lack what the schema requires of every call (deadline,
// target, target.host), or carry a timeoutMs no duration can hold, are
// refused as permanent, naming the field, before any handler runs.
func TestParamsRefusedBeforeHandler(t *testing.T) {
	var ran atomic.Int64
	h := func(context.Context, *protocol.Call) (any, error) { ran.Add(1); return nil, nil }
	s := serve(t, map[string]protocol.Handler{protocol.MethodLinkExec: h, protocol.MethodJobStatus: h, protocol.MethodChannelAbort: h})
	s.init()
	huge := `9223372036854775807`
	for i, c := range []struct{ method, params, want string }{
		{protocol.MethodJobStatus, ``, `job.status: params are required (deadline and target)`},
		{protocol.MethodJobStatus, `,"params":null`, `job.status: params are required (deadline and target)`},
		{protocol.MethodJobStatus, `,"params":{"target":{"host":{"name":"h"}}}`, `job.status: params lack deadline (epoch ms), which every call carries`},
		{protocol.MethodJobStatus, `,"params":{"deadline":0}`, `job.status: params lack target, which every call carries`},
		{protocol.MethodJobStatus, `,"params":{"deadline":0,"target":{}}`, `job.status: target lacks host`},
		{protocol.MethodJobStatus, `,"params":{"deadline":-5,"target":{"host":{"name":"h"}}}`, `job.status: deadline -5 is negative`},
		{protocol.MethodLinkExec, `,"params":{` + base + `,"script":"true","cwd":".","timeoutMs":` + huge + `}`,
			`link.exec: timeoutMs 9223372036854775807 exceeds the maximum, 31536000000 (365 days)`},
		{protocol.MethodLinkExec, `,"params":{` + base + `,"script":"true","cwd":".","timeoutMs":-1}`, `link.exec: timeoutMs -1 is negative`},
		{protocol.MethodChannelAbort, `,"params":{` + base + `,"timeoutMs":31536000001}`,
			`channel.abort: timeoutMs 31536000001 exceeds the maximum, 31536000000 (365 days)`},
	} {
		id := fmt.Sprint(10 + i)
		s.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + c.method + `"` + c.params + `}`)
		s.Expect(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32002,"message":"` + c.want + `","data":{"kind":"permanent"}}}`)
	}
	// A number past int64 is refused too, naming the field.
	s.Send(`{"jsonrpc":"2.0","id":30,"method":"link.exec","params":{` + base + `,"script":"true","cwd":".","timeoutMs":` + huge + `0}}`)
	if got := s.Recv(); !strings.Contains(got, `"id":30,"error":{"code":-32002,"message":"link.exec: invalid params:`) || !strings.Contains(got, "timeoutMs") {
		t.Errorf("timeoutMs past int64: %s", got)
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("a handler ran %d time(s) on refused params", n)
	}
	// The largest timeoutMs, and the smallest params, reach the handler.
	s.Send(`{"jsonrpc":"2.0","id":31,"method":"link.exec","params":{` + base + `,"script":"true","cwd":".","timeoutMs":31536000000}}`)
	s.Expect(`{"jsonrpc":"2.0","id":31,"result":null}`)
	s.Send(`{"jsonrpc":"2.0","id":32,"method":"job.status","params":{` + base + `}}`)
	s.Expect(`{"jsonrpc":"2.0","id":32,"result":null}`)
	if n := ran.Load(); n != 2 {
		t.Fatalf("the handler ran %d time(s), want 2", n)
	}
}

// RunTimeout is the one reading of timeoutMs every backend uses.
func TestRunTimeout(t *testing.T) {
	for _, c := range []struct {
		ms   int64
		want time.Duration
	}{
		{0, 20 * time.Second},
		{-1, 20 * time.Second},
		{1, time.Millisecond},
		{1500, 1500 * time.Millisecond},
		{protocol.MaxTimeoutMs, 365 * 24 * time.Hour},
		{9223372036854775807, 365 * 24 * time.Hour},
	} {
		if got := protocol.RunTimeout(c.ms); got != c.want {
			t.Errorf("RunTimeout(%d) = %v, want %v", c.ms, got, c.want)
		}
	}
	if protocol.RunTimeout(protocol.MaxTimeoutMs)+protocol.Grace <= 0 {
		t.Fatal("the largest timeout plus a grace overflows")
	}
}
