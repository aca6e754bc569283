package fake

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/mu-org/mu-plugins/protocol"
)

func TestFitKeepsTheReplyUnderOneMiB(t *testing.T) {
	bin := make([]byte, protocol.MaxLine)
	_, _ = rand.Read(bin)
	cases := map[string][2][]byte{
		"binary both":  {bin, bin},
		"html-ish":     {bytes.Repeat([]byte("<&>\x01"), protocol.MaxLine/4), nil},
		"utf8 stderr":  {nil, bytes.Repeat([]byte("é"), protocol.MaxLine/2)},
		"small stdout": {[]byte("ok\n"), bin},
	}
	for name, c := range cases {
		o, e, cut := fit(c[0], c[1], replyBudget)
		if !cut {
			t.Errorf("%s: not reported cut", name)
		}
		code := 0
		reply, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 123456789,
			"result": protocol.ExecResult{ExitCode: &code, Stdout: string(o), Stderr: string(e), Partial: true}})
		if len(reply) > protocol.MaxLine {
			t.Errorf("%s: reply is %d bytes, over 1 MiB", name, len(reply))
		}
		if !utf8.Valid(reply) {
			t.Errorf("%s: reply is not UTF-8", name)
		}
		if len(o)+len(e) < 100000 {
			t.Errorf("%s: kept only %d bytes: the budget is wasted", name, len(o)+len(e))
		}
	}
	o, e, cut := fit([]byte("a"), []byte("b"), replyBudget)
	if cut || string(o) != "a" || string(e) != "b" {
		t.Fatal("small output was changed")
	}
}

func TestEscapedSizeIsAnUpperBound(t *testing.T) {
	s := []byte("a\"\\\n\x00<\u2028é\xff")
	b, _ := json.Marshal(string(s))
	if got := escapedSize(s); got < len(b)-2 {
		t.Fatalf("escapedSize %d < encoded %d", got, len(b)-2)
	}
}
