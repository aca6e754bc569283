package docker_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/protocol"
)

func TestExecRunsScriptsInTheContainer(t *testing.T) {
	p := start(t)
	h := p.acquire(t, "key-exec", nil).Handle

	r := p.run(t, h, "echo out; echo err >&2; exit 7")
	if exitCode(r) != "7" || r.Stdout != "out\n" || r.Stderr != "err\n" || r.Partial {
		t.Errorf("exec: %+v code %s", r, exitCode(r))
	}
	// cwd "." is the login directory; relative cwds resolve from it.
	if r := p.run(t, h, "pwd; id -un"); r.Stdout != "/home/mu\nmu\n" {
		t.Errorf("cwd .: %q", r.Stdout)
	}
	p.run(t, h, "mkdir -p sub/dir")
	var rr protocol.ExecResult
	p.must(t, "link.exec", execParams(h, "pwd", "sub/dir", 10_000), &rr)
	if rr.Stdout != "/home/mu/sub/dir\n" {
		t.Errorf("relative cwd: %q", rr.Stdout)
	}
	p.must(t, "link.exec", execParams(h, "pwd", "/tmp", 10_000), &rr)
	if rr.Stdout != "/tmp\n" {
		t.Errorf("absolute cwd: %q", rr.Stdout)
	}
	p.must(t, "link.exec", execParams(h, "echo ran", "/no/such/dir", 10_000), &rr)
	if exitCode(rr) == "0" || strings.Contains(rr.Stdout, "ran") {
		t.Errorf("missing cwd ran the script: %+v", rr)
	}
	// The script is data: quotes, $, backticks, trailing newlines, and no stdin.
	script := "x='a \"b\" $HOME `c`'\nprintf '%s|' \"$x\"\ncat\nprintf 'end\\n\\n\\n'\n\n\n"
	if r := p.run(t, h, script); r.Stdout != "a \"b\" $HOME `c`|end\n\n\n" || exitCode(r) != "0" {
		t.Errorf("script bytes: %q code %s", r.Stdout, exitCode(r))
	}
	// A script's own markers or the plugin's variable cannot confuse the channel.
	// A script printing its environment (which holds its process mark) to
	// both streams, and marker-like text, does not end its output early.
	if r := p.run(t, h, "echo mu-end-0123 0; env; env >&2; echo last; echo elast >&2"); !strings.HasPrefix(r.Stdout, "mu-end-0123 0\n") ||
		!strings.HasSuffix(r.Stdout, "\nlast\n") || !strings.HasSuffix(r.Stderr, "\nelast\n") || !strings.Contains(r.Stderr, "MU_EXEC_RUN=") {
		t.Errorf("marker-like output: %q / %q", r.Stdout, r.Stderr)
	}
	// Oversized scripts are refused before anything runs.
	big := strings.Repeat("#", int(p.decl.Seams.Link.MaxScriptBytes)+1)
	if err := p.call(t, "link.exec", execParams(h, big, ".", 10_000), nil); err == nil || err.Kind != "permanent" {
		t.Errorf("oversized script: %v", err)
	}
	// A script at maxScriptBytes runs.
	fits := "echo ok #" + strings.Repeat("x", int(p.decl.Seams.Link.MaxScriptBytes)-9)
	if r := p.run(t, h, fits); r.Stdout != "ok\n" {
		t.Errorf("a script of maxScriptBytes: %q %q", r.Stdout, r.Stderr)
	}
}

func TestExecConcurrentRunsStaySeparate(t *testing.T) {
	p := start(t)
	h := p.acquire(t, "key-conc", nil).Handle
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := p.run(t, h, fmt.Sprintf("sleep 0.$((%d %% 3)); echo %d; echo e%d >&2; exit %d", i, i, i, i))
			if r.Stdout != fmt.Sprintf("%d\n", i) || r.Stderr != fmt.Sprintf("e%d\n", i) || exitCode(r) != fmt.Sprint(i) {
				t.Errorf("run %d: %+v code %s", i, r, exitCode(r))
			}
		}()
	}
	wg.Wait()
}

func TestExecOutputIsCappedToFitOneMessage(t *testing.T) {
	p := start(t)
	h := p.acquire(t, "key-cap", nil).Handle
	for name, script := range map[string]string{
		"plain 3 MiB":       "head -c 3145728 /dev/zero | tr '\\0' a",
		"escaped 1 MiB x6":  "head -c 1048576 /dev/zero | tr '\\0' '\\001'; head -c 900000 /dev/zero | tr '\\0' '<' >&2",
		"invalid bytes x6":  "head -c 1048576 /dev/zero | tr '\\0' '\\377'",
		"both streams 2MiB": "head -c 2097152 /dev/zero | tr '\\0' b; head -c 2097152 /dev/zero | tr '\\0' c >&2",
	} {
		rep := p.send(t, "link.exec", execParams(h, script, ".", 60_000))
		if rep.Error != nil {
			t.Errorf("%s: %v", name, rep.Error)
			continue
		}
		if len(rep.raw)+1 > 1<<20 {
			t.Errorf("%s: reply line is %d bytes, over 1 MiB", name, len(rep.raw)+1)
		}
		if !utf8.Valid(rep.raw) {
			t.Errorf("%s: reply is not valid UTF-8", name)
		}
		var r protocol.ExecResult
		_ = json.Unmarshal(rep.Result, &r)
		if !r.Partial || exitCode(r) != "0" || len(r.Stdout) == 0 {
			t.Errorf("%s: partial %v code %s stdout %d bytes", name, r.Partial, exitCode(r), len(r.Stdout))
		}
	}
	// Output just under the cap is whole.
	if r := p.run(t, h, "head -c 100000 /dev/zero | tr '\\0' a"); r.Partial || len(r.Stdout) != 100000 {
		t.Errorf("100 kB: partial %v, %d bytes", r.Partial, len(r.Stdout))
	}
	// The channel is still in step after cut runs.
	if r := p.run(t, h, "echo after"); r.Stdout != "after\n" {
		t.Errorf("after the cap: %q", r.Stdout)
	}
}

func TestExecBinaryOutput(t *testing.T) {
	p := start(t)
	h := p.acquire(t, "key-bin", nil).Handle
	// Every byte value, on both streams.
	script := `i=0; while [ $i -lt 256 ]; do printf "\\$(printf %o $i)"; i=$((i+1)); done; printf '\377\376' >&2`
	rep := p.send(t, "link.exec", execParams(h, script, ".", 30_000))
	if rep.Error != nil {
		t.Fatal(rep.Error)
	}
	if !utf8.Valid(rep.raw) {
		t.Fatalf("reply is not valid UTF-8")
	}
	var r protocol.ExecResult
	if err := json.Unmarshal(rep.Result, &r); err != nil {
		t.Fatal(err)
	}
	if r.Partial || exitCode(r) != "0" {
		t.Errorf("binary: partial %v code %s", r.Partial, exitCode(r))
	}
	// 128 ASCII bytes as they are, 128 invalid ones as U+FFFD each.
	if !strings.HasPrefix(r.Stdout, "\x00\x01\x02") || utf8.RuneCountInString(r.Stdout) != 256 ||
		strings.Count(r.Stdout, "\uFFFD") != 128 || r.Stderr != "\uFFFD\uFFFD" {
		t.Errorf("binary stdout: %d runes, %d U+FFFD; stderr %q", utf8.RuneCountInString(r.Stdout), strings.Count(r.Stdout, "\uFFFD"), r.Stderr)
	}
}

func TestExecTimeoutStopsEverything(t *testing.T) {
	p := start(t)
	h := p.acquire(t, "key-to", nil).Handle
	script := `echo started; sleep 301 & setsid sleep 302 & (trap '' TERM HUP; sleep 303) & nohup sleep 304 >/dev/null 2>&1 & sleep 300`
	var r protocol.ExecResult
	p.must(t, "link.exec", execParams(h, script, ".", 1500), &r)
	if r.ExitCode != nil {
		t.Fatalf("timed out run: exitCode %d, want null", *r.ExitCode)
	}
	if r.Stdout != "started\n" {
		t.Errorf("output before the timeout: %q", r.Stdout)
	}
	// Nothing of it is left, seen from outside the plugin.
	ps := docker(t, "exec", h, "ps", "-eo", "pid,args")
	if strings.Contains(ps, "sleep 30") {
		t.Errorf("the timed-out run left processes:\n%s", ps)
	}
	// The link still works after a timeout.
	if r := p.run(t, h, "echo alive"); r.Stdout != "alive\n" {
		t.Errorf("after the timeout: %q", r.Stdout)
	}
	// Background leftovers of a run that ended are stopped too.
	p.run(t, h, "sleep 305 & echo bg")
	if ps := docker(t, "exec", h, "ps", "-eo", "args"); strings.Contains(ps, "sleep 305") {
		t.Errorf("a finished run left a background process:\n%s", ps)
	}
}

func TestCheckStepsReach(t *testing.T) {
	p := start(t)
	h := p.acquire(t, "key-chk", nil).Handle
	var steps []protocol.Step
	p.must(t, "link.checkSteps", map[string]any{"deadline": deadline(), "target": hostTarget(h), "phase": "reach"}, &steps)
	names := []string{}
	for _, s := range steps {
		names = append(names, s.Step)
		if s.OK != protocol.StepPassed {
			t.Errorf("step %s: %s %s", s.Step, s.OK, s.Detail)
		}
	}
	if strings.Join(names, ",") != "endpoint,ping,api,image,container,git" {
		t.Errorf("steps %v", names)
	}
	docker(t, "kill", h)
	p.must(t, "link.checkSteps", map[string]any{"deadline": deadline(), "target": hostTarget(h), "phase": "reach"}, &steps)
	got := map[string]string{}
	for _, s := range steps {
		got[s.Step] = s.OK.String()
	}
	if got["container"] != "false" || got["git"] != "null" || got["ping"] != "true" {
		t.Errorf("steps on a stopped container: %v", got)
	}
}

// The image param picks another image; there (the base image runs as root)
// the link and its timeout behave the same.
func TestImageParamAndRootImage(t *testing.T) {
	p := start(t)
	h := p.acquire(t, "key-root", map[string]string{"image": testimage.BaseName}).Handle
	if img := docker(t, "inspect", "-f", "{{.Config.Image}}", h); img != testimage.BaseName {
		t.Errorf("image %q", img)
	}
	if r := p.run(t, h, "id -u; pwd"); r.Stdout != "0\n/root\n" {
		t.Errorf("root image: %q", r.Stdout)
	}
	var r protocol.ExecResult
	p.must(t, "link.exec", execParams(h, "setsid sleep 330 & sleep 331", ".", 1000), &r)
	if r.ExitCode != nil {
		t.Errorf("timeout: exit %d", *r.ExitCode)
	}
	if ps := docker(t, "exec", h, "ps", "-eo", "args"); strings.Contains(ps, "sleep 33") {
		t.Errorf("left running:\n%s", ps)
	}
}

// A link call runs only in this instance's hosts: not in another container,
// not in a fence placeholder, not in another instance's host.
func TestLinkRunsOnlyInItsOwnHosts(t *testing.T) {
	p := start(t)
	other := docker(t, "run", "-d", "--label", "org.mu-plugins.test=1", "--label", "org.mu-plugins.testrun="+runID,
		testimage.Name, "sleep", "infinity")
	var lk protocol.HostLookupResult
	p.must(t, "host.lookup", lookupParams("key-own-fence", true), &lk)
	fence := labelled("org.mu-plugins.key=key-own-fence")
	q := start(t, "--instance", "another")
	theirs := q.acquire(t, "key-own-theirs", nil).Handle
	if len(fence) != 1 {
		t.Fatalf("fence placeholder: %v", fence)
	}
	for name, h := range map[string]string{"a foreign container": other, "a fence placeholder": fence[0], "another instance's host": theirs} {
		err := p.call(t, "link.exec", execParams(h, "touch /tmp/ran", ".", 10_000), nil)
		if err == nil || err.Kind != "permanent" {
			t.Errorf("exec in %s: %v, want permanent", name, err)
		}
	}
	if out, err := exec.Command("docker", "exec", other, "ls", "/tmp/ran").CombinedOutput(); err == nil {
		t.Errorf("the script ran in a foreign container: %s", out)
	}
}
