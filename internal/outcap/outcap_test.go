package outcap

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"
)

// EscapedLen is exactly what encoding/json spends, for every byte value and
// for random mixes of text, HTML, control characters and invalid UTF-8.
func TestEscapedLenMatchesEncodingJSON(t *testing.T) {
	check := func(b []byte) {
		t.Helper()
		enc, _ := json.Marshal(string(b))
		if got, want := EscapedLen(b), len(enc)-2; got != want {
			t.Fatalf("%q: EscapedLen %d, encoding/json %d", b, got, want)
		}
	}
	for c := 0; c < 256; c++ {
		check([]byte{byte(c)})
	}
	r := rand.New(rand.NewSource(1))
	alphabet := []string{"a", "é", "世", "\x00", "\n", "\"", "\\", "<", "&", "\u2028", "\xff", "\xe2\x82", "\t"}
	for i := 0; i < 2000; i++ {
		var b bytes.Buffer
		for j := r.Intn(40); j > 0; j-- {
			b.WriteString(alphabet[r.Intn(len(alphabet))])
		}
		check(b.Bytes())
	}
}

// A fitted reply always marshals within the budget, keeps valid cut points,
// and says partial exactly when something was lost.
func TestFit(t *testing.T) {
	big := bytes.Repeat([]byte("\xff"), 300_000) // 1.8 MB escaped
	small := []byte("short stderr")
	for _, c := range []struct {
		out, errb []byte
		dropped   bool
		partial   bool
	}{
		{[]byte("ok"), []byte("err"), false, false},
		{[]byte("ok"), nil, true, true},
		{big, small, false, true},
		{small, big, false, true},
		{big, big, false, true},
	} {
		so, se, partial := Fit(c.out, c.errb, c.dropped, ReplyBudget)
		if partial != c.partial {
			t.Fatalf("partial %v, want %v", partial, c.partial)
		}
		b, _ := json.Marshal([]string{so, se})
		if len(b) > ReplyBudget+8 {
			t.Fatalf("escaped output %d bytes over budget %d", len(b), ReplyBudget)
		}
		if len(c.out) < 100 && so != string(c.out) || len(c.errb) < 100 && se != string(c.errb) {
			t.Fatal("a small stream was cut")
		}
	}
	if got := CutEscaped([]byte("é世"), 4); !utf8.Valid(got) || string(got) != "é" {
		t.Fatalf("cut inside a rune: %q", got)
	}
}

// A capture keeps its head, drops the rest, and says so, in flat memory.
func TestCapture(t *testing.T) {
	c := New(10)
	for i := 0; i < 1000; i++ {
		if n, err := c.Write([]byte("0123456789")); n != 10 || err != nil {
			t.Fatalf("Write = %d, %v: a capture must never short-write", n, err)
		}
	}
	b, dropped := c.Bytes()
	if string(b) != "0123456789" || !dropped || c.Total() != 10000 || cap(c.buf) > 64 {
		t.Fatalf("got %q %v %d cap %d", b, dropped, c.Total(), cap(c.buf))
	}
}

// A stream of exactly the limit is kept whole and not dropped; Kept is the
// copy Bytes gives.
func TestCaptureAtLimit(t *testing.T) {
	c := New(4)
	c.Write([]byte("ab"))
	c.Write([]byte("cd"))
	if b, dropped := c.Bytes(); string(b) != "abcd" || dropped {
		t.Fatalf("got %q dropped=%v, want all of it kept", b, dropped)
	}
	k := c.Kept()
	k[0] = 'x'
	if string(c.Kept()) != "abcd" {
		t.Fatal("Kept must return a copy")
	}
	c.Write([]byte("e"))
	if b, dropped := c.Bytes(); string(b) != "abcd" || !dropped {
		t.Fatalf("got %q dropped=%v, want the head and dropped", b, dropped)
	}
}

// Small budgets, every kind of escape: the fit is within budget, and a
// small stream keeps all of itself while the other takes the rest.
func TestFitSmallBudget(t *testing.T) {
	const budget = 1000
	for name, c := range map[string][2]string{
		"controls":      {strings.Repeat("\x01", 900), strings.Repeat("<", 300)},
		"invalid":       {strings.Repeat("\xff", 2000), ""},
		"runes":         {strings.Repeat("é€𝄞", 400), strings.Repeat("\u2028", 100)},
		"quotes":        {strings.Repeat(`"\`, 700), strings.Repeat("\n", 10)},
		"stderr bigger": {"out", strings.Repeat("b", 3000)},
	} {
		o, e, cut := Fit([]byte(c[0]), []byte(c[1]), false, budget)
		bo, _ := json.Marshal(o)
		be, _ := json.Marshal(e)
		if n := len(bo) - 2 + len(be) - 2; n > budget || !cut {
			t.Errorf("%s: escaped %d bytes (budget %d), cut %v", name, n, budget, cut)
		}
	}
	o, e, _ := Fit([]byte(strings.Repeat("a", 5000)), []byte("err"), false, budget)
	if e != "err" || len(o) != budget-3 {
		t.Errorf("uneven split: stdout %d bytes, stderr %q", len(o), e)
	}
}
