package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// The view shows a message's control bytes escaped: an escape sequence, a
// carriage return or a bidi override in a message (or an agent's name)
// never reaches the terminal raw.
func TestViewEscapesControlBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job-1.json")
	tr := Transcript{Job: "job-1", Agent: "ws/\x1b]0;title\x07a", Ended: true, Events: []Event{
		{At: 1, Who: "user", Text: "\x1b[31mred\x1b[0m\r\nnext\u202eevil\x00\x7f\u0085 tab\tok ünï"},
	}}
	b, _ := json.Marshal(tr)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := ViewCommand(context.Background(), []string{path}, &out); code != 0 {
		t.Fatalf("exit %d", code)
	}
	got := out.String()
	for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		for _, r := range l {
			if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
				t.Fatalf("the view printed %U raw:\n%q", r, got)
			}
		}
	}
	for _, want := range []string{`\x1b[31mred\x1b[0m\r\nnext\u202eevil\x00\x7f\u0085 tab\tok ünï`, `ws/\x1b]0;title\aa`} {
		if !strings.Contains(got, want) {
			t.Fatalf("the view lost %q:\n%s", want, got)
		}
	}
}
