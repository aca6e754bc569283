package contract

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// copyFake copies mu-plugin-fake to dir/base with mode.
func copyFake(t *testing.T, base string, mode os.FileMode) string {
	t.Helper()
	src, err := os.Open(fakeBin(t))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(t.TempDir(), base)
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRegistrationRules: each registration rule a file can break fails its
// own check, by name.
func TestRegistrationRules(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mu-plugin-dir")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	owned := copyFake(t, "mu-plugin-fake", 0o755)
	if err := os.Chown(owned, 65534, 65534); err != nil {
		t.Fatalf("chown (the tests run as root): %v", err)
	}
	cases := []struct {
		name, path, check string
	}{
		{"relative", "mu-plugin-fake", "registration/absolute-path"},
		{"basename", copyFake(t, "plugin-fake", 0o755), "registration/basename"},
		{"group-writable", copyFake(t, "mu-plugin-fake", 0o775), "registration/not-writable"},
		{"world-writable", copyFake(t, "mu-plugin-fake", 0o757), "registration/not-writable"},
		{"directory", dir, "registration/regular-file"},
		{"owner", owned, "registration/owner"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := run(t, Options{Argv: []string{c.path}, Run: `^(registration|handshake)/`})
			if r := status(t, rep, c.check); r.Status != Fail {
				t.Errorf("%s %s, want FAIL", r.Status, c.check)
			}
			for _, r := range rep.Results {
				if r.Name != c.check && strings.HasPrefix(r.Name, "registration/") && r.Status == Fail &&
					!(c.name == "relative" || c.name == "directory") {
					t.Errorf("%s also failed: %s", r.Name, r.Reason)
				}
			}
			// mu refuses such a file: the handshake checks fail too.
			if r := status(t, rep, "handshake/within-10s"); r.Status != Fail {
				t.Errorf("handshake/within-10s %s on a file mu refuses", r.Status)
			}
		})
	}
	t.Run("symlink", func(t *testing.T) {
		// A symlink named mu-plugin-fake to a good file passes: the rules
		// follow it.
		link := filepath.Join(t.TempDir(), "mu-plugin-fake")
		if err := os.Symlink(fakeBin(t), link); err != nil {
			t.Fatal(err)
		}
		rep := run(t, Options{Argv: []string{link}, Run: `^registration/`})
		if _, failed, _ := rep.Counts(); failed != 0 {
			t.Errorf("a symlink to a good plugin fails registration: %s", rep.Summary())
		}
	})
}

// TestHandshakeRules: a plugin registered under another name, one with
// another schema digest, and one whose declaration breaks a load rule each
// fail their check.
func TestHandshakeRules(t *testing.T) {
	t.Run("name", func(t *testing.T) {
		other := copyFake(t, "mu-plugin-other", 0o755)
		rep := run(t, Options{Argv: []string{other}, Run: `^(handshake|link/exec-streams)`})
		wantResult(t, rep, "handshake/name", Fail, `"fake"`)
		wantResult(t, rep, "handshake/within-10s", Pass, "")
		wantResult(t, rep, "link/exec-streams", Fail, "") // a plugin mu refuses
	})
	t.Run("digest", func(t *testing.T) {
		argv, env := testPlugin(t, "digest")
		rep := run(t, Options{Argv: argv, Env: env, Run: `^handshake/`})
		wantResult(t, rep, "handshake/digest", Fail, "")
		wantResult(t, rep, "handshake/name", Pass, "")
		wantResult(t, rep, "handshake/load-rules", Skip, "") // refused earlier
	})
	t.Run("load", func(t *testing.T) {
		argv, env := testPlugin(t, "load")
		rep := run(t, Options{Argv: argv, Env: env, Run: `^handshake/`})
		wantResult(t, rep, "handshake/load-rules", Fail, "host-needs-link-and-job")
		wantResult(t, rep, "handshake/digest", Pass, "")
	})
}

// TestLeakyLink: a link that hands its environment to scripts and leaves a
// timed-out script's children running fails the canary check and the
// remoteOnTimeout check; its other link checks pass or skip.
func TestLeakyLink(t *testing.T) {
	argv, env := testPlugin(t, "leaky")
	rep := run(t, Options{Argv: argv, Env: env,
		Run: `^(link/exec-(exit-codes|streams|cwd|timeout|timeout-remote)|link/fetch|link/push|host/acquire|process/group|secrets/canary)$`})
	want := map[string]Status{
		"link/exec-exit-codes": Pass, "link/exec-streams": Pass, "link/exec-cwd": Pass, "link/exec-timeout": Pass,
		"link/exec-timeout-remote": Fail, "secrets/canary": Fail, "process/group": Pass,
		"link/fetch": Skip, "link/push": Skip, "host/acquire": Skip,
	}
	for name, st := range want {
		wantResult(t, rep, name, st, "")
	}
	if r := status(t, rep, "secrets/canary"); !strings.Contains(r.Reason, "a message") {
		t.Errorf("secrets/canary names no message: %s", r.Reason)
	}
	if r := status(t, rep, "link/exec-timeout-remote"); !strings.Contains(r.Reason, "still running") {
		t.Errorf("link/exec-timeout-remote: %s", r.Reason)
	}
}

// TestUnknownMethodAnswered: a plugin that answers any method with a
// result fails wire/unknown-method.
func TestUnknownMethodAnswered(t *testing.T) {
	argv, env := testPlugin(t, "answers-anything")
	rep := run(t, Options{Argv: argv, Env: env, Run: `^wire/unknown-method$`})
	if r := status(t, rep, "wire/unknown-method"); r.Status != Fail {
		t.Errorf("wire/unknown-method %s", r.Status)
	}
}

// TestCutShutdownBatchCaught: the checks of a cut run's kind, of shutdown
// as a notification and of a batch line each fail, by name, for a plugin
// that breaks exactly that rule (and the other selected checks pass), and
// pass against the fake.
func TestCutShutdownBatchCaught(t *testing.T) {
	t.Parallel() // its own plugins: waits beside the others
	const sel = `^(link/exec-(exit-codes|cut)|process/(cancel|shutdown|shutdown-notification)|wire/(unknown-method|batch))$`
	for _, c := range []struct{ mode, fails, only string }{
		// answers a cut run retryable
		{"cut-liar", "link/exec-cut", `^(link/exec-(exit-codes|cut)|process/(cancel|shutdown)|wire/unknown-method)$`},
		// the same, only when its deadline cut it
		{"cut-liar-deadline", "link/exec-cut", `^link/exec-cut$`},
		// ignores a shutdown notification (and answers any method with a result)
		{"answers-anything", "process/shutdown-notification", `^process/(shutdown|shutdown-notification)$`},
		// answers a batch with an array
		{"batch-array", "wire/batch", `^(wire/(unknown-method|batch)|process/shutdown)$`},
	} {
		t.Run(c.mode, func(t *testing.T) {
			argv, env := testPlugin(t, c.mode)
			rep := run(t, Options{Argv: argv, Env: env, Run: c.only})
			for _, r := range rep.Results {
				want := Pass
				if r.Name == c.fails {
					want = Fail
				}
				if r.Status != want {
					t.Errorf("%s %s (%s), want %s", r.Name, r.Status, r.Reason, want)
				}
			}
		})
	}
	t.Run("fake", func(t *testing.T) {
		rep := run(t, Options{Argv: []string{fakeBin(t)}, Run: sel})
		if len(rep.Results) != 7 {
			t.Fatalf("%d results", len(rep.Results))
		}
		for _, r := range rep.Results {
			if r.Status != Pass {
				t.Errorf("%s %s: %s", r.Name, r.Status, r.Reason)
			}
		}
	})
}

// TestMainOutput: the command's lines, its closing line and exit codes.
func TestMainOutput(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"--run", `^(registration|wire/unknown)`, "--", fakeBin(t)}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 7 || lines[len(lines)-1] != "6 passed, 0 failed, 0 skipped" {
		t.Errorf("output:\n%s", out.String())
	}
	for _, l := range lines[:len(lines)-1] {
		if !regexp.MustCompile(`^PASS [a-z0-9-]+/[a-z0-9-]+$`).MatchString(l) {
			t.Errorf("line %q", l)
		}
	}

	out.Reset()
	sc := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(sc, []byte(`{"faults":[{"method":"link.exec","fault":"not-json"}]}`), 0o600)
	code = Main(context.Background(), []string{"--run", `^(link/exec-streams|wire/json)$`, "--", fakeBin(t), "--scenario", sc}, &out, &errb)
	if code != 1 {
		t.Errorf("exit %d with failures, want 1", code)
	}
	if !strings.Contains(out.String(), "FAIL link/exec-streams: ") || !strings.Contains(out.String(), "    <- this is not JSON") ||
		!strings.HasSuffix(out.String(), "0 passed, 2 failed, 0 skipped\n") {
		t.Errorf("output:\n%s", out.String())
	}

	out.Reset()
	if code := Main(context.Background(), []string{"list"}, &out, &errb); code != 0 || strings.Count(out.String(), "\n") != len(Names()) {
		t.Errorf("list: exit %d:\n%s", code, out.String())
	}
	if code := Main(context.Background(), []string{"--run", "("}, &out, &errb); code != 2 {
		t.Errorf("a bad --run: exit %d, want 2", code)
	}
}

// TestCallTool: one call, its transcript, and its exit code.
func TestCallTool(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"call", "--", fakeBin(t), "link.exec", `{"script":"echo hi","cwd":".","timeoutMs":5000}`}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	s := out.String()
	for _, want := range []string{
		`-> {"jsonrpc":"2.0","id":1,"method":"initialize"`,
		`-> {"jsonrpc":"2.0","id":2,"method":"link.exec","params":{"deadline":`,
		`"target":{"host":{"name":"contract"}}`,
		`<- {"jsonrpc":"2.0","id":2,"result":{"exitCode":0,"stdout":"hi\n"`,
		`"method":"shutdown"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("transcript lacks %s:\n%s", want, s)
		}
	}
	out.Reset()
	code = Main(context.Background(), []string{"call", "--", fakeBin(t), "host.release", `{"key":"k","target":{"host":{"name":"h"}}}`}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), `"target":{"host":{"name":"h"}}`) {
		t.Errorf("a given target is kept: exit %d\n%s", code, out.String())
	}
	out.Reset()
	code = Main(context.Background(), []string{"call", "--", fakeBin(t), "contract.nope", `{}`}, &out, &errb)
	if code != 1 {
		t.Errorf("an unknown method: exit %d, want 1\n%s", code, out.String())
	}
}

// TestDemo runs the demo against the fake, with each firstTurn.
func TestDemo(t *testing.T) {
	for _, args := range [][]string{nil, {"--first-turn", "at-start"}} {
		var out bytes.Buffer
		if err := Demo(context.Background(), append([]string{fakeBin(t)}, args...), &out); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out.String())
		}
		s := out.String()
		t.Logf("%v:\n%s", args, s)
		for _, step := range []string{"start", "acquire", "exec", "push", "spawn", "view", "send", "watch", "collect", "stop", "release", "exit"} {
			if !regexp.MustCompile(`(?m)^` + step + ` `).MatchString(s) {
				t.Errorf("%v: no %s step", args, step)
			}
		}
		for _, want := range []string{"watch/settled: runs 1", "FETCH_HEAD is", "alice: a haiku", "job.status now ended", "the job has ended", "emptied by itself"} {
			if !strings.Contains(s, want) {
				t.Errorf("%v: the demo does not say %q", args, want)
			}
		}
	}
}

// TestOneLinePerCheck: a reason with line breaks still prints on one line.
func TestOneLinePerCheck(t *testing.T) {
	var b bytes.Buffer
	printResult(&b, Result{Name: "x/y", Status: Fail, Reason: "before:\n a\nafter: b", Wire: []string{"<- z"}}, "c")
	if got, want := b.String(), "FAIL x/y: before: / a / after: b\n    <- z\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestDocumented: docs/contract.md names every check.
func TestDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/contract.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range Names() {
		if !strings.Contains(string(b), "`"+n+"`") {
			t.Errorf("docs/contract.md does not name %s", n)
		}
	}
}
