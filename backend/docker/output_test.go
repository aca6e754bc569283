package docker

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// The channel's output arrives in chunks of any size: a marker split across
// writes must still end the run, and the bytes before it are the output.
func TestCollectorFindsMarkersAcrossWrites(t *testing.T) {
	r := newRun()
	stream := "hello " + r.tok[:5] + " world\n" + "tail" + r.tok + " 42\n" + "junk after"
	for size := 1; size <= len(stream); size++ {
		c := collector{marker: []byte(r.tok + " "), limit: 8}
		for i := 0; i < len(stream); i += size {
			c.write([]byte(stream[i:min(i+size, len(stream))]))
		}
		want := "hello " + r.tok[:5] + " world\ntail"
		if !c.complete || string(c.trailer) != "42" || c.total != int64(len(want)) || string(c.kept) != want[:8] || !c.cut() {
			t.Fatalf("chunk %d: complete %v trailer %q total %d kept %q", size, c.complete, c.trailer, c.total, c.kept)
		}
	}
}

func TestFitOutputFitsTheEscapedBudget(t *testing.T) {
	const budget = 1000
	cases := map[string][2]string{
		"small":         {"abc", "def"},
		"controls":      {strings.Repeat("\x01", 900), strings.Repeat("<", 300)},
		"invalid":       {strings.Repeat("\xff", 2000), ""},
		"runes":         {strings.Repeat("é€𝄞", 400), strings.Repeat("\u2028", 100)},
		"one big":       {strings.Repeat("a", 5000), "err"},
		"quotes":        {strings.Repeat(`"\`, 700), strings.Repeat("\n", 10)},
		"stderr bigger": {"out", strings.Repeat("b", 3000)},
	}
	for name, c := range cases {
		o, e, cut := fitOutput([]byte(c[0]), []byte(c[1]), budget)
		bo, _ := json.Marshal(o)
		be, _ := json.Marshal(e)
		if n := len(bo) - 2 + len(be) - 2; n > budget {
			t.Errorf("%s: escaped %d bytes > %d", name, n, budget)
		}
		if !utf8.ValidString(o) || !utf8.ValidString(e) {
			t.Errorf("%s: not valid UTF-8", name)
		}
		whole := o == c[0] && e == c[1]
		if cut == whole && utf8.ValidString(c[0]) {
			t.Errorf("%s: cut %v but output whole %v", name, cut, whole)
		}
	}
	// A small stream keeps all of itself when the other is cut.
	o, e, _ := fitOutput([]byte(strings.Repeat("a", 5000)), []byte("err"), budget)
	if e != "err" || len(o) != budget-3 {
		t.Errorf("uneven split: stdout %d bytes, stderr %q", len(o), e)
	}
}
