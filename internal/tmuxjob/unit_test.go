package tmuxjob

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/schemacheck"
)

func TestCutTextMatchesEncodingJSON(t *testing.T) {
	alphabet := []rune{'a', 'é', '日', '🙂', '"', '\\', '\n', '\r', '\t', 0, 1, 0x1f, '<', '>', '&', 0x2028, 0x2029, 0x7f}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for n := rng.IntN(60); n > 0; n-- {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		s := b.String()
		if rng.IntN(5) == 0 {
			s += "\xff\xfe" // invalid UTF-8
		}
		max := 2 + rng.IntN(200)
		got, cut := cutText(s, max)
		enc, _ := json.Marshal(got)
		if len(enc) > max {
			t.Fatalf("cut %q to %q: %d encoded bytes > %d", s, got, len(enc), max)
		}
		full, _ := json.Marshal(strings.ToValidUTF8(s, "\uFFFD"))
		if cut != (len(full) > max) {
			t.Fatalf("cut=%v for %q (encoded %d, max %d)", cut, s, len(full), max)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("cut %q is not valid UTF-8", got)
		}
		if cut {
			// Maximal: one more rune would not fit.
			valid := strings.ToValidUTF8(s, "\uFFFD")
			if !strings.HasPrefix(valid, got) {
				t.Fatalf("%q is not a prefix of %q", got, valid)
			}
			_, size := utf8.DecodeRuneInString(valid[len(got):])
			more, _ := json.Marshal(valid[:len(got)+size])
			if len(more) <= max {
				t.Fatalf("cut %q short: %q fits in %d", got, valid[:len(got)+size], max)
			}
		}
	}
}

// The env file, sourced by a real sh, gives back every value exactly.
func TestEnvFileRoundTripsThroughSh(t *testing.T) {
	env := map[string]string{
		"A":     "plain",
		"B":     "it's \"q\" $(touch /tmp/pwned-tmuxjob) `x` ${HOME} \\ \n second line\n",
		"C_1":   "",
		"UNI":   "日本 🙂 \x01\x1b[31m",
		"QUOTE": "'''",
	}
	f, err := envFile(env)
	if err != nil {
		t.Fatal(err)
	}
	script := f + `for n in A B C_1 UNI QUOTE; do eval "v=\${$n}"; printf '%s=%s\0' "$n" "$v"; done`
	out, err := exec.CommandContext(context.Background(), "/bin/sh", "-c", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	for k, v := range env {
		if got[k] != v {
			t.Fatalf("%s: got %q want %q", k, got[k], v)
		}
	}
	for _, bad := range []map[string]string{{"1A": "x"}, {"A-B": "x"}, {"MU_CHANNEL_DIR": "x"}, {"A": "nul\x00"}} {
		if _, err := envFile(bad); err == nil {
			t.Fatalf("envFile accepted %q", bad)
		}
	}
}

func TestParseStateAndTurn(t *testing.T) {
	s, ok := parseState([]byte("inc=abc-1\nstate=blocked\nsince=12\nruns=3\ncursor=0000000007\nacursor=2\nmsg=0000000007.ff\npending=proceed?\n"))
	if !ok || s.Inc != "abc-1" || s.State != "blocked" || s.Since != 12 || s.Runs != 3 || s.Cursor != 7 || s.Pending != "proceed?" {
		t.Fatalf("%+v %v", s, ok)
	}
	for _, bad := range []string{
		"inc=abc\nstate=sleeping\nsince=1\nruns=0\n",
		"inc=../x\nstate=idle\nsince=1\nruns=0\n",
		"inc=abc\nstate=idle\nsince=1\nruns=-1\n",
		"inc=abc\nstate=idle\nruns=0\n",
		"",
	} {
		if _, ok := parseState([]byte(bad)); ok {
			t.Fatalf("parsed %q", bad)
		}
	}
	tr, ok := parseTurn([]byte("at=5\nmsg=m\nerror=\n\nline1\n\nline3"))
	if !ok || tr.At != 5 || tr.Text != "line1\n\nline3" || tr.Error != "" {
		t.Fatalf("%+v %v", tr, ok)
	}
	if tr, ok := parseTurn([]byte("at=5\nerror=interrupted\n\n")); !ok || tr.Text != "" || tr.Error != "interrupted" {
		t.Fatalf("%+v %v", tr, ok)
	}
}

func TestDeclarationLoads(t *testing.T) {
	seams := Seams("tmux", "tmux-chan", nil)
	job, ch := seams.Job, seams.Channel
	o := protocol.Options{Name: "x", Version: "1", Instance: "i", Seams: seams}
	if err := protocol.ValidateDeclaration(o.Declaration()); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(o.Declaration())
	if err := schemacheck.Declaration(b); err != nil {
		t.Fatal(err)
	}
	if job.Channel != ch.Name || job.View != "detached" || job.Handle != "reply" || !job.Start.Lookup || !job.Start.FenceKey ||
		job.FirstTurn != "on-send" || job.OutlivesHost == nil || *job.OutlivesHost || !job.Honours.Command || !job.Honours.Env {
		t.Fatalf("job seam: %+v", job)
	}
}

// TestEmitRoundTripsThroughSh: lib.sh's emit and emitv, run by /bin/sh on
// files of every shape, give back the files' bytes through parseOut (emitv:
// a one-line file as a plain line, anything else as a blob); a blob cut
// short is an error, not a short value.
func TestEmitRoundTripsThroughSh(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 100<<10)
	for i := range big {
		big[i] = byte(i * 7)
	}
	files := []string{"ws/a1", "", " lead and trail ", "tab\there", "ends in CR\r", "two\nlines", "trailing newline\n",
		"nul\x00byte", "日本 🙂", "\x1b[31mred", "1795988264518-24772-b926e27b", string(big)}
	var script strings.Builder
	script.WriteString(script0(t))
	for i, f := range files {
		p := filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(p, []byte(f), 0o600); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&script, "emit b%d %q\nemitv v%d %q\n", i, p, i, p)
	}
	script.WriteString("emitv none " + filepath.Join(dir, "missing") + "\nsay ok 1\n")
	b, err := exec.CommandContext(context.Background(), "/bin/sh", "-c", script.String(), "t", dir, "id", "sock").Output()
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseOut(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		if got := o.blob("b" + strconv.Itoa(i)); string(got) != f {
			t.Errorf("emit %q: got %q", f, got)
		}
		// emitv is for files this plugin wrote from an argument: no NUL.
		if !strings.Contains(f, "\x00") {
			if got := o.data("v" + strconv.Itoa(i)); string(got) != f {
				t.Errorf("emitv %q: got %q", f, got)
			}
		}
	}
	if o.data("none") != nil || o.get("ok") != "1" {
		t.Errorf("a missing file printed %q, ok %q", o.data("none"), o.get("ok"))
	}
	for _, cut := range []string{"@k\nYQ==\n", "@k\n"} {
		if _, err := parseOut([]byte(cut)); err == nil {
			t.Errorf("parseOut(%q): no error for a blob cut short", cut)
		}
	}
	if o, err := parseOut([]byte("@k YQ==\n@e\n@\nx 1\n")); err != nil || string(o.blob("k")) != "a" || !o.hasBlob("e") || o.get("x") != "1" {
		t.Errorf("the one-line and the empty blob: %v %v", o, err)
	}
}

// script0 is lib.sh alone, as the prelude of a test's script.
func script0(t *testing.T) string {
	t.Helper()
	lib, err := scriptFS.ReadFile("scripts/lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	return string(lib) + "\n"
}

// TestWrapperReadsFilesAsCatWould: the wrapper's mu_file (builtins) gives
// a job's cwd and cmd files exactly as "$(cat FILE)" did.
func TestWrapperReadsFilesAsCatWould(t *testing.T) {
	i := strings.Index(wrapper, "mu_file() {")
	j := strings.Index(wrapper[i:], "\n}\n")
	if i < 0 || j < 0 {
		t.Fatal("no mu_file in wrapper.sh")
	}
	fn := wrapper[i : i+j+3]
	dir := t.TempDir()
	for n, s := range []string{"", "exec sh 'x y'", "a\nb", "two trailing\n\n", "\n\nlead", "  sp  \n", "back\\slash \\n", "x\n\ny\n", "no newline at end", "$(touch pwned) `q` \"d\""} {
		p := filepath.Join(dir, strconv.Itoa(n))
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		script := fn + `mu_file "$1"; c=$(cat "$1"); [ "$mu_f" = "$c" ] && printf ok`
		b, err := exec.CommandContext(context.Background(), "/bin/sh", "-c", script, "t", p).CombinedOutput()
		if err != nil || string(b) != "ok" {
			t.Errorf("%q: %s %v", s, b, err)
		}
	}
}

// TestEntriesCountsTheQueue: lib.sh's entries gives the last entry and
// how many are past the cursor, for a queue numbered without a gap (its
// count, no look at each entry) and for one with gaps (counted one by one).
func TestEntriesCountsTheQueue(t *testing.T) {
	for _, c := range []struct {
		nums    []int
		cursor  int
		last, q string
	}{
		{nil, 0, "", "0"},
		{[]int{1, 2, 3, 4, 5}, 0, "5", "5"},
		{[]int{1, 2, 3, 4, 5}, 3, "5", "2"},
		{[]int{1, 2, 3, 4, 5}, 5, "5", "0"},
		{[]int{1, 2, 3, 4, 5}, 9, "5", "0"},
		{[]int{1, 2, 4}, 1, "4", "2"},
		{[]int{2, 3}, 0, "3", "2"},
		{[]int{3, 4, 5}, 4, "5", "1"},
	} {
		dir := t.TempDir()
		for _, n := range c.nums {
			if err := os.Mkdir(filepath.Join(dir, fmt.Sprintf("%010d.%032x", n, n)), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		// Hidden entries (being written, spares) are not in the queue.
		if err := os.Mkdir(filepath.Join(dir, ".spare.1.0"), 0o700); err != nil {
			t.Fatal(err)
		}
		script := script0(t) + fmt.Sprintf("st_cursor=%d\nentries %q\nnum \"$E\"\nsay \"last $N\"\nsay \"q $Q\"\n", c.cursor, dir)
		b, err := exec.CommandContext(context.Background(), "/bin/sh", "-c", script, "t", dir, "id", "sock").Output()
		if err != nil {
			t.Fatal(err)
		}
		o, _ := parseOut(b)
		last := c.last
		if last == "" {
			last = "0"
		}
		if o.get("last") != last || o.get("q") != c.q {
			t.Errorf("%v past %d: last %s, %s queued; want %s, %s", c.nums, c.cursor, o.get("last"), o.get("q"), last, c.q)
		}
	}
}
