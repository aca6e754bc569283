package execchan

import "testing"

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
