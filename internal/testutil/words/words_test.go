package words

import (
	"os/exec"
	"strings"
	"testing"
)

// JSON marshals.
func TestJSON(t *testing.T) {
	if got := JSON(map[string]int{"a": 1}); got != `{"a":1}` {
		t.Fatalf("JSON: %s", got)
	}
}

// ShQuote's word is s to sh, whatever s holds.
func TestShQuote(t *testing.T) {
	for _, s := range []string{"", "plain", "it's", `a "b" $(c) \d`, "'", "''\n'"} {
		out, err := exec.Command("sh", "-c", "printf %s "+ShQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("%q: sh read %q (%v)", s, out, err)
		}
	}
}

// RandHex is n random bytes in hex, different each time.
func TestRandHex(t *testing.T) {
	a, b := RandHex(6), RandHex(6)
	if len(a) != 12 || strings.Trim(a, "0123456789abcdef") != "" || a == b {
		t.Fatalf("RandHex(6): %q then %q", a, b)
	}
}
