package ssh

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mu-org/mu-plugins/internal/testsshd"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

func TestExecOutputCap(t *testing.T) {
	d := onBox(t)
	cases := []struct{ name, script, fill string }{
		{"ascii", `head -c 3000000 /dev/zero | tr '\0' a; head -c 3000000 /dev/zero | tr '\0' b >&2; echo done >&2`, "a"},
		{"invalid-bytes", `head -c 2000000 /dev/zero | tr '\0' '\377'; echo done >&2`, "\ufffd"},
		{"html", `head -c 2000000 /dev/zero | tr '\0' '<'; echo done >&2`, "<"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, r := d.exec("box", c.script, ".", 60*time.Second)
			if r != nil {
				t.Fatalf("exec: %s", r.Message)
			}
			in := d.Wire.Lines(caller.In)
			if raw := len(in[len(in)-1]); raw > protocol.MaxLine {
				t.Fatalf("reply of %d bytes exceeds 1 MiB", raw)
			}
			if !res.Partial {
				t.Error("partial not set")
			}
			if res.ExitCode == nil || *res.ExitCode != 0 {
				t.Fatalf("exit %s: the output was not drained to the end", fmtExit(res.ExitCode))
			}
			if !utf8.ValidString(res.Stdout) || strings.Trim(res.Stdout, c.fill) != "" || len(res.Stdout) < 100000 {
				t.Errorf("stdout is not the head of the output (%d bytes)", len(res.Stdout))
			}
		})
	}
}

// TestExecMemoryFlat: the plugin's peak RSS stays small while a script
// prints 100 MB.
func TestExecMemoryFlat(t *testing.T) {
	_, cfg := server(t, testsshd.Options{})
	d := subproc(t, nil, "--config", cfg.SSHConfig)
	res, r := d.exec("box", `head -c 100000000 /dev/zero; echo end >&2`, ".", 120*time.Second)
	if r != nil || res.ExitCode == nil || *res.ExitCode != 0 || !res.Partial {
		t.Fatalf("exec: %+v %+v", res.ExitCode, r)
	}
	hwm := vmHWM(t, d.Pgid())
	t.Logf("peak RSS after 100 MB of output: %d KiB", hwm)
	if hwm > 64<<10 {
		t.Fatalf("peak RSS %d KiB: memory grew with the output", hwm)
	}
}

func vmHWM(t testing.TB, pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			n, _ := strconv.Atoi(strings.Fields(l)[1])
			return n
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

func TestCanaryNeverLeaks(t *testing.T) {
	s, cfg := server(t, testsshd.Options{})
	canary := "mu-canary-8c1f3e2a"
	d := subproc(t, []string{"MU_PLUGIN_CANARY=" + canary}, "--config", cfg.SSHConfig, "--log-level", "debug")
	var all []string
	res, r := d.exec("box", "env; echo $MU_PLUGIN_CANARY", ".", 30*time.Second)
	all = append(all, res.Stdout, res.Stderr)
	if r != nil {
		t.Fatal(r.Message)
	}
	_, r = d.exec("nowhere.invalid", "true", ".", 10*time.Second)
	if r != nil {
		all = append(all, r.Message, r.Remedy)
	}
	_ = s
	d.CloseStdin() // every log line is written
	for _, x := range append(all, d.Stderr.String()) {
		if strings.Contains(x, canary) {
			t.Fatalf("the canary leaked: %q", x)
		}
	}
}
