package protocol

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadLine(t *testing.T) {
	const max = 8
	in := "abc\n12345678\n123456789\n\nlast"
	r := bufio.NewReaderSize(strings.NewReader(in), 16)
	want := []struct {
		line string
		err  error
	}{{"abc", nil}, {"12345678", nil}, {"", ErrLineTooLong}, {"", nil}, {"last", nil}, {"", io.EOF}}
	for i, w := range want {
		got, err := ReadLine(r, max)
		if !errors.Is(err, w.err) && !(err == nil && w.err == nil) {
			t.Fatalf("%d: err %v, want %v", i, err, w.err)
		}
		if string(got) != w.line {
			t.Fatalf("%d: line %q, want %q", i, got, w.line)
		}
	}
}

// An over-long line longer than the reader's buffer is skipped whole, and
// the next line is read intact.
func TestReadLineSkipsHugeLine(t *testing.T) {
	in := strings.Repeat("x", 5*MaxLine) + "\n{}\n"
	r := bufio.NewReaderSize(strings.NewReader(in), 4096)
	if _, err := ReadLine(r, MaxLine); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("got %v", err)
	}
	got, err := ReadLine(r, MaxLine)
	if err != nil || string(got) != "{}" {
		t.Fatalf("got %q %v", got, err)
	}
}

func TestPeekReply(t *testing.T) {
	for _, c := range []struct{ in, id, field string }{
		{`{"jsonrpc":"2.0","id":7,"result":null}`, "7", "result"},
		{`{"jsonrpc":"2.0","id":"a b","error":{"code":1}}`, `"a b"`, "error"},
		{`{"jsonrpc":"2.0","method":"watch/settled","params":{}}`, "", "method"},
		{`garbage`, "", ""},
	} {
		id, f := peekReply([]byte(c.in))
		if id != c.id || f != c.field {
			t.Errorf("%s: got %q %q", c.in, id, f)
		}
	}
}

// The read off the bytes (peekFast) gives the decoder's answer for every
// message it takes, and takes the forms jrpc2 writes.
func TestPeekFastAgreesWithDecoder(t *testing.T) {
	for _, c := range []struct {
		in   string
		fast bool
	}{
		{`{"jsonrpc":"2.0","id":7,"result":null}`, true},
		{`{"jsonrpc":"2.0","id":-12,"error":{"code":1}}`, true},
		{`{"jsonrpc":"2.0","id":"a b","result":{}}`, true},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}`, true},
		{`{"jsonrpc":"2.0","method":"watch/settled","params":{}}`, true},
		{`{"jsonrpc":"2.0","id":1.5,"result":1}`, false},
		{`{"jsonrpc":"2.0","id":"\u0041","result":1}`, false},
		{`{"jsonrpc":"2.0","id":{"a":1},"result":1}`, false},
		{`{"jsonrpc":"2.0","id":007,"result":1}`, false},
		{`{"id":1,"jsonrpc":"2.0","result":1}`, false},
		{`{"jsonrpc":"2.0","id":1,"params":1,"result":1}`, false},
		{`garbage`, false},
	} {
		id, f, ok := peekFast([]byte(c.in))
		if ok != c.fast {
			t.Errorf("%s: fast %v, want %v", c.in, ok, c.fast)
		}
		did, df := peekDecode([]byte(c.in))
		if ok && (id != did || f != df) {
			t.Errorf("%s: fast %q %q, decoder %q %q", c.in, id, f, did, df)
		}
	}
}

func FuzzPeekFast(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"result":null}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","error":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"m"}`))
	f.Fuzz(func(t *testing.T, rec []byte) {
		id, field, ok := peekFast(rec)
		if !ok {
			return
		}
		if did, df := peekDecode(rec); id != did || field != df {
			t.Fatalf("%q: fast %q %q, decoder %q %q", rec, id, field, did, df)
		}
	})
}

func FuzzReadLine(f *testing.F) {
	f.Add([]byte("{}\n{\"a\":1}\n"), 8)
	f.Add([]byte("no newline"), 3)
	f.Add([]byte("\n\n\n"), 1)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 1 || max > 1<<12 {
			return
		}
		r := bufio.NewReaderSize(bytes.NewReader(data), 16)
		var total int
		for {
			line, err := ReadLine(r, max)
			if errors.Is(err, io.EOF) {
				break
			}
			if errors.Is(err, ErrLineTooLong) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(line) > max {
				t.Fatalf("line of %d bytes past cap %d", len(line), max)
			}
			if bytes.IndexByte(line, '\n') >= 0 {
				t.Fatal("newline inside a line")
			}
			total += len(line)
		}
		if total > len(data) {
			t.Fatal("read more than was written")
		}
	})
}

func FuzzEnsureKind(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32700,"message":"x"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32097}}`))
	f.Fuzz(func(t *testing.T, rec []byte) {
		out := ensureKind(rec)
		id, field := peekReply(out)
		_ = id
		if field == "error" && !bytes.Equal(out, rec) && !bytes.Contains(out, []byte(`"kind":`)) {
			t.Fatalf("rewritten error without a kind: %s", out)
		}
	})
}
