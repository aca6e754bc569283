package schemacheck

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/crashdrill"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/schemas"
)

func TestMessageValid(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"result":null}`,
		`{"jsonrpc":"2.0","id":"a","result":{"exitCode":0,"stdout":"","stderr":"","partial":false}}`,
		`{"jsonrpc":"2.0","id":1,"result":[]}` + "\n",
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"busy","data":{"kind":"retryable"}}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error","data":{"kind":"permanent"}}}`,
		`{"jsonrpc":"2.0","method":"watch/settled","params":{"watchId":"w","observation":{}}}`,
		`{"jsonrpc":"2.0","method":"$/cancel","params":{"id":1}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":{"min":1,"max":1},"mu":"5"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`,
	} {
		if err := Message([]byte(line)); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
	// A real error reply, as protocol.ToWire builds its error.
	for _, k := range []protocol.Kind{protocol.Retryable, protocol.Permanent, protocol.Human, protocol.UnknownOutcome} {
		e := protocol.ToWire(protocol.Errorf(k, "x"), protocol.MethodHostStatus.Name)
		line := json.RawMessage(words.JSON(map[string]any{"jsonrpc": "2.0", "id": 3, "error": e}))
		if err := Message(line); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
}

func TestMessageInvalid(t *testing.T) {
	for _, c := range []struct{ line, saying string }{
		{`{"jsonrpc":"2.0","id":1}`, `missing property 'result'`},
		{`{"jsonrpc":"2.0","id":1,"result":null,"error":{"code":1,"message":"m","data":{"kind":"permanent"}}}`, `not allowed`},
		{`{"jsonrpc":"2.0","id":1,"result":null,"extra":1}`, `'extra' not allowed`},
		{`{"jsonrpc":"2.0","id":1,"Result":null}`, `not allowed`},
		{`{"jsonrpc":"1.0","id":1,"result":null}`, `at "/jsonrpc": got "1.0", want "2.0"`},
		{`{"id":1,"result":null}`, `missing property 'jsonrpc'`},
		{`{"jsonrpc":2.0,"id":1,"result":null}`, `"/jsonrpc"`},
		{`{"jsonrpc":"2.0","id":1.5,"result":null}`, `"/id"`},
		{`{"jsonrpc":"2.0","id":{},"result":null}`, `"/id"`},
		{`{"jsonrpc":"2.0","id":null,"result":null}`, `"/id"`},
		{`{"jsonrpc":"2.0","result":null}`, `missing property 'id'`},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":{"kind":"human"}}}`, `at "/error/data": missing property 'remedy'`},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":{"kind":"fatal"}}}`, `"/error/data/kind"`},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`, `at "/error": missing property 'data'`},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1,"data":{"kind":"permanent"}}}`, `missing property 'message'`},
		{`{"jsonrpc":"2.0","method":"watch/settled","params":"x"}`, `"/params"`},
		{`{"jsonrpc":"2.0","method":7}`, `"/method"`},
		{`[{"jsonrpc":"2.0","id":1,"result":null}]`, `want object`},
		{`{"jsonrpc":"2.0","id":1,"result":null} {"jsonrpc":"2.0","id":2,"result":null}`, `not valid JSON`},
		{`{"jsonrpc":"2.0","id":1,"result":nul}`, `not valid JSON`},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}", `UTF-8`},
		{``, `empty`},
		{"\n", `empty`},
		{`null`, `want object`},
	} {
		err := Message([]byte(c.line))
		if err == nil {
			t.Errorf("%q accepted", c.line)
			continue
		}
		if strings.ContainsAny(err.Error(), "\n\r") || !strings.Contains(err.Error(), c.saying) {
			t.Errorf("%q: %q, want one line saying %s", c.line, err, c.saying)
		}
	}
}

// TestConcurrentFirstUse: the lazy compile is safe when many goroutines
// make the first call at once (run under -race).
func TestConcurrentFirstUse(t *testing.T) {
	once, compiled, loadErr = sync.Once{}, nil, nil
	good := json.RawMessage(words.JSON(examples["link.exec"].results[0]))
	bad := apply(good, del("/partial"))
	errs := make(chan string, 64)
	crashdrill.Parallel(32, func(int) {
		if err := Result("link.exec", good); err != nil {
			errs <- err.Error()
		}
		if err := Result("link.exec", bad); err == nil {
			errs <- "accepted a result without partial"
		}
		if !Known("job.start") {
			errs <- "job.start unknown"
		}
	})
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestCompileRefusesBrokenSchemas(t *testing.T) {
	for _, c := range []struct{ name, doc, saying string }{
		{"not JSON", `{`, "not JSON"},
		{"not an object", `[]`, "not an object"},
		{"no notifications", `{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"x.params":{}}}`, "watch/"},
		{"bad definition", `{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"x.params":{"type":7}}}`, "x.params"},
	} {
		_, err := compile([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.saying) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.saying)
		}
	}
	k, err := compile(schemas.V1)
	if err != nil || len(k.params) != len(allMethods) {
		t.Fatalf("compile(V1): %v, %d methods", err, len(k.params))
	}
}

func BenchmarkResultLinkExec(b *testing.B) {
	r := json.RawMessage(words.JSON(protocol.ExecResult{ExitCode: intp(0), Stdout: strings.Repeat("output line\n", 40), Stderr: "warn\n"}))
	if err := Result("link.exec", r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(r)))
	for b.Loop() {
		if err := Result("link.exec", r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDeclaration(b *testing.B) {
	r := json.RawMessage(words.JSON(fullDecl))
	b.ReportAllocs()
	for b.Loop() {
		if err := Declaration(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMessage(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":17,"result":{"exitCode":0,"stdout":"hello\n","stderr":"","partial":false}}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := Message(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResultLinkExecInvalid(b *testing.B) {
	r := []byte(`{"exitCode":"0","stdout":"","stderr":"","partial":false}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := Result("link.exec", r); err == nil {
			b.Fatal("accepted")
		}
	}
}

// BenchmarkCompile is the one-time cost of the first call.
func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compile(schemas.V1); err != nil {
			b.Fatal(err)
		}
	}
}
