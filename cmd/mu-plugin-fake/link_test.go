package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/proc"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/gitrepo"
	"github.com/mu-org/mu-plugins/internal/testutil/osproc"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
)

func execP(h, script, cwd string, timeoutMs int64) protocol.ExecParams {
	return protocol.ExecParams{Base: protocol.Base{Target: drive.HostTarget(h)}, Script: script, Cwd: cwd, TimeoutMs: timeoutMs}
}

func TestExecRunsInTheHostDirWithACleanEnv(t *testing.T) {
	root := t.TempDir()
	p := start(t, "--root", root)
	r := drive.Call(t, p, protocol.MethodLinkExec, execP("box", "mkdir -p sub; echo out; echo err >&2; pwd; env; exit 7", ".", 10000))
	if r.ExitCode == nil || *r.ExitCode != 7 {
		t.Fatalf("exit %v, want 7", r.ExitCode)
	}
	if !strings.HasPrefix(r.Stdout, "out\n"+filepath.Join(root, "hosts", "box")+"\n") || r.Stderr != "err\n" || r.Partial {
		t.Fatalf("stdout %q stderr %q partial %v", r.Stdout, r.Stderr, r.Partial)
	}
	if strings.Contains(r.Stdout, canary) || strings.Contains(r.Stdout, markEnv) {
		t.Fatalf("the plugin's own environment reached the script:\n%s", r.Stdout)
	}
	r = drive.Call(t, p, protocol.MethodLinkExec, execP("box", "pwd", "sub", 10000))
	if r.Stdout != filepath.Join(root, "hosts", "box", "sub")+"\n" {
		t.Fatalf("cwd sub: pwd %q", r.Stdout)
	}
	r = drive.Call(t, p, protocol.MethodLinkExec, execP("box", "kill -9 $$", ".", 10000))
	if r.ExitCode == nil || *r.ExitCode != 137 {
		t.Fatalf("a script killed by SIGKILL: exit %v, want 137", r.ExitCode)
	}
	big := strings.Repeat("x", 64<<10+1)
	if re := drive.Err(t, p, protocol.MethodLinkExec, execP("box", big, ".", 10000)); re == nil || re.Kind != protocol.Permanent {
		t.Fatalf("a script past maxScriptBytes: %v, want a permanent error", re)
	}
}

// On timeout the whole tree is gone before the answer: exitCode null.
func TestExecTimeoutKillsTheTreeBeforeAnswering(t *testing.T) {
	root := t.TempDir()
	p := start(t, "--root", root)
	script := `sleep 300 & echo $! > bg.pid; sh -c 'sleep 300' & echo $! > bg2.pid; echo started; wait`
	r := drive.Call(t, p, protocol.MethodLinkExec, execP("box", script, ".", 1500))
	if r.ExitCode != nil {
		t.Fatalf("exitCode %d, want null", *r.ExitCode)
	}
	if r.Stdout != "started\n" {
		t.Fatalf("stdout %q: output before the timeout was lost", r.Stdout)
	}
	for _, f := range []string{"bg.pid", "bg2.pid"} {
		b, err := os.ReadFile(filepath.Join(root, "hosts", "box", f))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if osproc.Alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("pid %d (%s) still runs after the timed-out answer", pid, f)
		}
	}
}

func TestExecOutputPastTheCapAndBinaryGiveAValidReply(t *testing.T) {
	p := start(t)
	for name, script := range map[string]string{
		"binary":   "head -c 3000000 /dev/urandom; head -c 500000 /dev/urandom >&2",
		"long":     "yes 'a line of text' | head -c 5000000",
		"escaping": "yes '<&>\"' | head -c 2000000",
	} {
		raw, err := p.Call(waitfor.Context(t, time.Minute), protocol.MethodLinkExec.Name, execP("box", script, ".", 20000), 0)
		if err != nil {
			t.Fatalf("%s: %v (the reply must stay a valid message)", name, err)
		}
		var r protocol.ExecResult
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if !r.Partial || r.ExitCode == nil {
			t.Fatalf("%s: partial=%v exit=%v, want partial with an exit code", name, r.Partial, r.ExitCode)
		}
		if len(raw) > protocol.MaxLine || len(r.Stdout) < 100000 {
			t.Fatalf("%s: result %d bytes, stdout %d", name, len(raw), len(r.Stdout))
		}
	}
}

func TestFetchAndPushUseRealGit(t *testing.T) {
	root := t.TempDir()
	p := start(t, "--root", root)
	local, rev := gitrepo.Repo(t, t.TempDir(), "one\n")

	push := protocol.PushParams{Base: protocol.Base{Target: drive.HostTarget("box")}, LocalRepo: local, RemoteRepo: "repos/new", Rev: rev, TimeoutMs: 20000}
	r := drive.Call(t, p, protocol.MethodLinkPush, push)
	if r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("push: %+v", r)
	}
	remote := filepath.Join(root, "hosts", "box", "repos", "new")
	if got := gitrepo.Git(t, remote, "rev-parse", rev+"^{commit}"); got != rev {
		t.Fatalf("the created repo does not hold %s", rev)
	}
	refs := gitrepo.Git(t, remote, "for-each-ref")
	r = drive.Call(t, p, protocol.MethodLinkPush, push)
	if r.ExitCode == nil || *r.ExitCode != 0 || gitrepo.Git(t, remote, "for-each-ref") != refs {
		t.Fatalf("a second push was not an untouched success: %+v", r)
	}

	// A repo on the host with its own HEAD, made through the link itself.
	mk := `git init -q work && cd work && echo two > g && git add g && git -c user.name=h -c user.email=h@h commit -qm two && git rev-parse HEAD`
	r = drive.Call(t, p, protocol.MethodLinkExec, execP("box", mk, ".", 20000))
	if r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("making the host repo: %+v", r)
	}
	head := strings.TrimSpace(r.Stdout)
	fetch := protocol.FetchParams{Base: protocol.Base{Target: drive.HostTarget("box")}, RemoteCwd: "work", LocalRepo: local, TimeoutMs: 20000}
	for i := 0; i < 2; i++ {
		os.Remove(filepath.Join(local, ".git", "FETCH_HEAD")) // mu deletes it before a fetch
		r = drive.Call(t, p, protocol.MethodLinkFetch, fetch)
		if r.ExitCode == nil || *r.ExitCode != 0 {
			t.Fatalf("fetch %d: %+v", i, r)
		}
		b, err := os.ReadFile(filepath.Join(local, ".git", "FETCH_HEAD"))
		if err != nil || !strings.HasPrefix(string(b), head) {
			t.Fatalf("fetch %d: FETCH_HEAD %q, want it to name %s", i, b, head)
		}
	}
	fetch.RemoteCwd = "missing"
	r = drive.Call(t, p, protocol.MethodLinkFetch, fetch)
	if r.ExitCode == nil || *r.ExitCode == 0 {
		t.Fatalf("a fetch from nowhere succeeded: %+v", r)
	}
}

func TestCheckSteps(t *testing.T) {
	p := start(t)
	steps := drive.Call(t, p, protocol.MethodLinkCheckSteps, protocol.CheckStepsParams{Base: protocol.Base{Target: drive.HostTarget("box")}, Phase: "reach", Root: "nope"})
	if len(steps) != 2 || steps[0].OK != protocol.StepPassed || steps[1].OK != protocol.StepWarn {
		t.Fatalf("steps %s", words.JSON(steps))
	}
	steps = drive.Call(t, p, protocol.MethodJobCheckSteps, protocol.CheckStepsParams{Base: protocol.Base{Target: drive.HostTarget("box")}, Phase: "agent"})
	if len(steps) != 1 || steps[0].OK != protocol.StepPassed {
		t.Fatalf("job steps %s", words.JSON(steps))
	}
}

// quiescence "provable": whatever a script started, even outside its tree
// (setsid, a double fork, through a shell that exits at once), is gone when
// link.exec answers, many times over.
func TestExecLeavesNoEscapeRunning(t *testing.T) {
	p := start(t)
	base := 4_000_000 + os.Getpid()%1000*1000 // this run's own sleep lengths
	n := base
	for _, pat := range proc.EscapePatterns {
		var left []string
		for i := 0; i < 15; i++ {
			n++
			r := drive.Call(t, p, protocol.MethodLinkExec, execP("box", fmt.Sprintf(pat, n), ".", 10000))
			if r.ExitCode == nil || *r.ExitCode != 0 {
				t.Fatalf("%s: exit %v: %s", pat, r.ExitCode, r.Stderr)
			}
			for _, pid := range proc.WithArgv("sleep", strconv.Itoa(n)) {
				left = append(left, fmt.Sprintf("sleep %d (pid %d)", n, pid))
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if len(left) > 0 {
			t.Errorf("%s: still running after link.exec answered: %v", pat, left)
		}
	}
}
