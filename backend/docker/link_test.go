package docker_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil/dockercli"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/protocol"
)

func TestExecRunsScriptsInTheContainer(t *testing.T) {
	p := start(t)
	h := p.Acquire(t, "key-exec", nil).Handle

	sandboxtest.ExecStreams(t, p.Plugin, h)
	// cwd "." is the login directory; relative cwds resolve from it.
	if r := p.Run(t, h, "pwd; id -un"); r.Stdout != "/home/mu\nmu\n" {
		t.Errorf("cwd .: %q", r.Stdout)
	}
	p.Run(t, h, "mkdir -p sub/dir")
	rr := sandboxtest.Must(t, p, protocol.MethodLinkExec, sandboxtest.ExecParams(h, "pwd", "sub/dir", 10_000))
	if rr.Stdout != "/home/mu/sub/dir\n" {
		t.Errorf("relative cwd: %q", rr.Stdout)
	}
	rr = sandboxtest.Must(t, p, protocol.MethodLinkExec, sandboxtest.ExecParams(h, "pwd", "/tmp", 10_000))
	if rr.Stdout != "/tmp\n" {
		t.Errorf("absolute cwd: %q", rr.Stdout)
	}
	rr = sandboxtest.Must(t, p, protocol.MethodLinkExec, sandboxtest.ExecParams(h, "echo ran", "/no/such/dir", 10_000))
	if sandboxtest.ExitCode(rr) == "0" || strings.Contains(rr.Stdout, "ran") {
		t.Errorf("missing cwd ran the script: %+v", rr)
	}
	sandboxtest.ExecScriptIsData(t, p.Plugin, h)
	// A script's own markers or the plugin's variable cannot confuse the channel.
	// A script printing its environment (which holds its process mark) to
	// both streams, and marker-like text, does not end its output early.
	if r := p.Run(t, h, "echo mu-end-0123 0; env; env >&2; echo last; echo elast >&2"); !strings.HasPrefix(r.Stdout, "mu-end-0123 0\n") ||
		!strings.HasSuffix(r.Stdout, "\nlast\n") || !strings.HasSuffix(r.Stderr, "\nelast\n") || !strings.Contains(r.Stderr, "MU_EXEC_RUN=") {
		t.Errorf("marker-like output: %q / %q", r.Stdout, r.Stderr)
	}
	sandboxtest.ExecOversizedRefused(t, p.Plugin, h)
	// A script at maxScriptBytes runs.
	fits := "echo ok #" + strings.Repeat("x", int(p.decl.Seams.Link.MaxScriptBytes)-9)
	if r := p.Run(t, h, fits); r.Stdout != "ok\n" {
		t.Errorf("a script of maxScriptBytes: %q %q", r.Stdout, r.Stderr)
	}
}

func TestExecConcurrentRunsStaySeparate(t *testing.T) {
	p := start(t)
	sandboxtest.ExecConcurrent(t, p.Plugin, p.Acquire(t, "key-conc", nil).Handle, 12)
}

func TestExecOutputIsCappedToFitOneMessage(t *testing.T) {
	p := start(t)
	h := p.Acquire(t, "key-cap", nil).Handle
	for name, script := range map[string]string{
		"plain 3 MiB":       "head -c 3145728 /dev/zero | tr '\\0' a",
		"escaped 1 MiB x6":  "head -c 1048576 /dev/zero | tr '\\0' '\\001'; head -c 900000 /dev/zero | tr '\\0' '<' >&2",
		"invalid bytes x6":  "head -c 1048576 /dev/zero | tr '\\0' '\\377'",
		"both streams 2MiB": "head -c 2097152 /dev/zero | tr '\\0' b; head -c 2097152 /dev/zero | tr '\\0' c >&2",
	} {
		rep := sandboxtest.Send(t, p, protocol.MethodLinkExec, sandboxtest.ExecParams(h, script, ".", 60_000))
		if rep.Error != nil {
			t.Errorf("%s: %v", name, rep.Error)
			continue
		}
		if len(rep.Raw)+1 > 1<<20 {
			t.Errorf("%s: reply line is %d bytes, over 1 MiB", name, len(rep.Raw)+1)
		}
		if !utf8.Valid(rep.Raw) {
			t.Errorf("%s: reply is not valid UTF-8", name)
		}
		var r protocol.ExecResult
		_ = json.Unmarshal(rep.Result, &r)
		if !r.Partial || sandboxtest.ExitCode(r) != "0" || len(r.Stdout) == 0 {
			t.Errorf("%s: partial %v code %s stdout %d bytes", name, r.Partial, sandboxtest.ExitCode(r), len(r.Stdout))
		}
	}
	// Output just under the cap is whole.
	if r := p.Run(t, h, "head -c 100000 /dev/zero | tr '\\0' a"); r.Partial || len(r.Stdout) != 100000 {
		t.Errorf("100 kB: partial %v, %d bytes", r.Partial, len(r.Stdout))
	}
	// The channel is still in step after cut runs.
	if r := p.Run(t, h, "echo after"); r.Stdout != "after\n" {
		t.Errorf("after the cap: %q", r.Stdout)
	}
}

func TestExecBinaryOutput(t *testing.T) {
	p := start(t)
	h := p.Acquire(t, "key-bin", nil).Handle
	// Every byte value, on both streams.
	script := `i=0; while [ $i -lt 256 ]; do printf "\\$(printf %o $i)"; i=$((i+1)); done; printf '\377\376' >&2`
	rep := sandboxtest.Send(t, p, protocol.MethodLinkExec, sandboxtest.ExecParams(h, script, ".", 30_000))
	if rep.Error != nil {
		t.Fatal(rep.Error)
	}
	if !utf8.Valid(rep.Raw) {
		t.Fatalf("reply is not valid UTF-8")
	}
	var r protocol.ExecResult
	if err := json.Unmarshal(rep.Result, &r); err != nil {
		t.Fatal(err)
	}
	if r.Partial || sandboxtest.ExitCode(r) != "0" {
		t.Errorf("binary: partial %v code %s", r.Partial, sandboxtest.ExitCode(r))
	}
	// 128 ASCII bytes as they are, 128 invalid ones as U+FFFD each.
	if !strings.HasPrefix(r.Stdout, "\x00\x01\x02") || utf8.RuneCountInString(r.Stdout) != 256 ||
		strings.Count(r.Stdout, "\uFFFD") != 128 || r.Stderr != "\uFFFD\uFFFD" {
		t.Errorf("binary stdout: %d runes, %d U+FFFD; stderr %q", utf8.RuneCountInString(r.Stdout), strings.Count(r.Stdout, "\uFFFD"), r.Stderr)
	}
}

func TestExecTimeoutStopsEverything(t *testing.T) {
	p := start(t)
	h := p.Acquire(t, "key-to", nil).Handle
	// Nothing of it is left, seen from outside the plugin.
	sandboxtest.ExecTimeoutStops(t, p.Plugin, h, func(args ...string) string {
		return dockercli.Docker(t, append([]string{"exec", h, "ps"}, args...)...)
	})
}

func TestCheckStepsReach(t *testing.T) {
	p := start(t)
	h := p.Acquire(t, "key-chk", nil).Handle
	steps := sandboxtest.Must(t, p, protocol.MethodLinkCheckSteps, protocol.CheckStepsParams{Base: protocol.Base{Target: sandboxtest.HostTarget(h)}, Phase: "reach"})
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
	dockercli.Docker(t, "kill", h)
	steps = sandboxtest.Must(t, p, protocol.MethodLinkCheckSteps, protocol.CheckStepsParams{Base: protocol.Base{Target: sandboxtest.HostTarget(h)}, Phase: "reach"})
	got := map[string]string{}
	for _, s := range steps {
		got[s.Step] = s.OK.String()
	}
	if got["container"] != "false" || got["git"] != "null" || got["ping"] != "true" {
		t.Errorf("steps on a stopped container: %v", got)
	}
}

// The image param picks another image; there (the base image runs as
// root, which the user param must ask for) the link and its timeout
// behave the same.
func TestImageParamAndRootImage(t *testing.T) {
	p := start(t)
	h := p.Acquire(t, "key-root", map[string]string{"image": testimage.BaseName, "user": "root"}).Handle
	if img := dockercli.Docker(t, "inspect", "-f", "{{.Config.Image}}", h); img != testimage.BaseName {
		t.Errorf("image %q", img)
	}
	if r := p.Run(t, h, "id -u; pwd"); r.Stdout != "0\n/root\n" {
		t.Errorf("root image: %q", r.Stdout)
	}
	r := sandboxtest.Must(t, p, protocol.MethodLinkExec, sandboxtest.ExecParams(h, "setsid sleep 330 & sleep 331", ".", 1000))
	if r.ExitCode != nil {
		t.Errorf("timeout: exit %d", *r.ExitCode)
	}
	if ps := dockercli.Docker(t, "exec", h, "ps", "-eo", "args"); strings.Contains(ps, "sleep 33") {
		t.Errorf("left running:\n%s", ps)
	}
}

// A link call runs only in this instance's hosts: not in another container,
// not in a fence placeholder, not in another instance's host.
func TestLinkRunsOnlyInItsOwnHosts(t *testing.T) {
	p := start(t)
	other := dockercli.Docker(t, "run", "-d", "--label", "org.mu-plugins.test=1", "--label", "org.mu-plugins.testrun="+runID,
		testimage.Name, "sleep", "infinity")
	p.Lookup(t, "key-own-fence", true) // the fence placeholder
	fence := labelled("org.mu-plugins.key=key-own-fence")
	q := start(t, "--instance", "another")
	theirs := q.Acquire(t, "key-own-theirs", nil).Handle
	if len(fence) != 1 {
		t.Fatalf("fence placeholder: %v", fence)
	}
	for name, h := range map[string]string{"a foreign container": other, "a fence placeholder": fence[0], "another instance's host": theirs} {
		err := sandboxtest.Err(t, p, protocol.MethodLinkExec, sandboxtest.ExecParams(h, "touch /tmp/ran", ".", 10_000))
		if err == nil || err.Kind != "permanent" {
			t.Errorf("exec in %s: %v, want permanent", name, err)
		}
	}
	if out, err := exec.Command("docker", "exec", other, "ls", "/tmp/ran").CombinedOutput(); err == nil {
		t.Errorf("the script ran in a foreign container: %s", out)
	}
}
