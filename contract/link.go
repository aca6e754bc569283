package contract

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// execBudget is the timeoutMs of the suite's quick scripts.
const execBudget = 15 * time.Second

// linkChecks are the link seam's rules: link.exec's result, timeout and
// cap; link.fetch's FETCH_HEAD; link.push's creation and idempotence.
func linkChecks() []check {
	need := []string{seamLink}
	return []check{
		{name: "link/exec-exit-codes", needs: need, run: checkLinkExecExitCodes},
		{name: "link/exec-streams", needs: need, run: checkLinkExecStreams},
		{name: "link/exec-cwd", needs: need, run: checkLinkExecCwd},
		{name: "link/exec-timeout", needs: need, run: checkLinkExecTimeout},
		{name: "link/exec-timeout-remote", needs: need, run: checkLinkExecTimeoutRemote},
		{name: "link/exec-partial", needs: need, run: checkLinkExecPartial},
		{name: "link/exec-binary", needs: need, run: checkLinkExecBinary},
		{name: "link/fetch", needs: need, run: checkLinkFetch},
		{name: "link/push", needs: need, run: checkLinkPush},
		{name: "link/push-idempotent", needs: need, run: checkLinkPushIdempotent},
		{name: "link/check-steps", needs: need, run: checkLinkCheckSteps},
	}
}

// checkLinkExecExitCodes (link/exec-exit-codes): `exit 0`, `1`, `7`, `255`
// come back as `exitCode`.
func checkLinkExecExitCodes(t *T) {
	p, tg := t.linkSession()
	for _, code := range []int{0, 1, 7, 255} {
		r := t.exec(p, tg, fmt.Sprintf("exit %d", code), ".", execBudget)
		if r.ExitCode == nil || *r.ExitCode != code {
			t.Failf("`exit %d` gave exitCode %s", code, showCode(r.ExitCode))
		}
	}
}

// checkLinkExecStreams (link/exec-streams): stdout and stderr are kept
// apart, byte for byte.
func checkLinkExecStreams(t *T) {
	p, tg := t.linkSession()
	r := t.exec(p, tg, `printf 'to stdout'; printf 'to stderr' >&2`, ".", execBudget)
	t.Check(r.Stdout == "to stdout", "stdout is %q, want %q", r.Stdout, "to stdout")
	t.Check(r.Stderr == "to stderr", "stderr is %q, want %q", r.Stderr, "to stderr")
	t.Check(r.ExitCode != nil && *r.ExitCode == 0, "exitCode %s, want 0", showCode(r.ExitCode))
}

// checkLinkExecCwd (link/exec-cwd): `cwd: "."` is the login directory, and a
// relative `cwd` is under it.
func checkLinkExecCwd(t *T) {
	p, tg := t.linkSession()
	home := strings.TrimSpace(t.exec(p, tg, "pwd -P", ".", execBudget).Stdout)
	dir := t.Unique("mu-contract-cwd")
	t.mustExec(p, tg, "mkdir -p "+shq(dir), ".")
	t.Cleanup(func() { t.quietExec(p, tg, "rm -rf "+shq(dir)) })
	got := strings.TrimSpace(t.exec(p, tg, "pwd -P", dir, execBudget).Stdout)
	t.Check(home != "" && got == strings.TrimSuffix(home, "/")+"/"+dir,
		"cwd %q ran in %q; the login directory (cwd \".\") is %q", dir, got, home)
}

// checkLinkExecPartial (link/exec-partial): 2 MiB of output answers a valid
// reply with `partial: true`.
func checkLinkExecPartial(t *T) {
	p, tg := t.linkSession()
	r := t.exec(p, tg, `head -c 2097152 /dev/zero | tr '\000' x`, ".", execBudget)
	t.Check(r.Partial, "2 MiB of output came back with partial: false (%d bytes of stdout)", len(r.Stdout))
	t.Check(len(r.Stdout) > 0, "2 MiB of output came back with an empty stdout")
}

// checkLinkExecBinary (link/exec-binary): output that is not UTF-8 answers a
// valid reply.
func checkLinkExecBinary(t *T) {
	p, tg := t.linkSession()
	// The caller side has already judged the reply: one line, UTF-8, schema-valid.
	r := t.exec(p, tg, `printf '\377\376\000\001bin\n'; printf '\300\200' >&2`, ".", execBudget)
	t.Check(r.ExitCode != nil && *r.ExitCode == 0, "exitCode %s, want 0", showCode(r.ExitCode))
	t.Check(strings.Contains(r.Stdout, "bin"), "stdout %q lost the printable bytes", r.Stdout)
}

// checkLinkCheckSteps (link/check-steps): `link.checkSteps` answers each
// declared phase (a `human` error is a hand-back and passes).
func checkLinkCheckSteps(t *T) {
	d := t.Decl()
	if len(d.Seams.Link.Checks) == 0 {
		t.Skipf("the link declares no check phases")
	}
	p, tg := t.linkSession()
	for _, ph := range d.Seams.Link.Checks {
		steps, err := caller.Invoke(t.Ctx(), p, protocol.MethodLinkCheckSteps, protocol.CheckStepsParams{
			Base: protocol.Base{Target: tg}, Phase: ph, Root: "."})

		var re *caller.RemoteError
		if err != nil && !(errors.As(err, &re) && re.Kind == protocol.Human) {
			t.Failf("link.checkSteps %s: %v", ph, err)
		}
		for _, s := range steps {
			t.Check(s.Step != "", "link.checkSteps %s: a step without a name", ph)
		}
	}
}

func showCode(c *int) string {
	if c == nil {
		return "null"
	}
	return fmt.Sprint(*c)
}

// linkSession starts a plugin and returns the host to run on.
func (t *T) linkSession() (*caller.Plugin, protocol.Target) {
	p := t.Start()
	return p, t.linkTarget(p)
}

// exec runs a script; an error reply ends the check.
func (t *T) exec(p *caller.Plugin, tg protocol.Target, script, cwd string, timeout time.Duration) protocol.ExecResult {
	r, err := p.Exec(t.Ctx(), tg, script, cwd, timeout)
	if err != nil {
		t.Failf("link.exec: %v", err)
	}
	return r
}

// mustExec runs a set-up script that must exit 0.
func (t *T) mustExec(p *caller.Plugin, tg protocol.Target, script, cwd string) protocol.ExecResult {
	r := t.exec(p, tg, script, cwd, execBudget)
	if r.ExitCode == nil || *r.ExitCode != 0 {
		t.Failf("set-up script %q exited %s: %s", script, showCode(r.ExitCode), strings.TrimSpace(r.Stderr))
	}
	return r
}

// quietExec runs a clean-up script and ignores the outcome.
func (t *T) quietExec(p *caller.Plugin, tg protocol.Target, script string) {
	_, _ = p.Exec(t.Ctx(), tg, script, ".", execBudget)
}

// checkLinkExecTimeout (link/exec-timeout): the plugin enforces timeoutMs,
// and only it: `sleep 30` with 1 s answers exitCode null, not before 1 s has
// passed since the request was written (a lower bound, measured on this
// side, so it cannot fail a plugin that keeps it however slow the machine);
// and a script that ends well inside its timeoutMs answers its exit code,
// never null.
func checkLinkExecTimeout(t *T) {
	p, tg := t.linkSession()
	const timeout = time.Second
	start := time.Now()
	r := t.exec(p, tg, "sleep 30", ".", timeout)
	took := time.Since(start)
	if t.Check(r.ExitCode == nil, "`sleep 30` with timeoutMs 1000 gave exitCode %s, want null", showCode(r.ExitCode)) {
		t.Check(took >= timeout, "`sleep 30` with timeoutMs 1000 was answered timed out %s after the request: before its timeoutMs had passed",
			took.Round(time.Millisecond))
	}
	r = t.exec(p, tg, "sleep 0.2; exit 3", ".", execBudget)
	t.Check(r.ExitCode != nil && *r.ExitCode == 3, "`sleep 0.2; exit 3` with timeoutMs %d gave exitCode %s, want 3: a script that ends inside its timeoutMs answers its exit code",
		execBudget.Milliseconds(), showCode(r.ExitCode))
}

// checkLinkExecTimeoutRemote (link/exec-timeout-remote): a timed-out
// script's processes are gone when the plugin answers (stopped), or within
// one grace (stopping). The script writes its pids to a file a follow-up
// exec checks.
func checkLinkExecTimeoutRemote(t *T) {
	d := t.Decl()
	mode := d.Seams.Link.RemoteOnTimeout
	if mode == protocol.RemoteUnknown {
		t.Skipf(`remoteOnTimeout is "unknown": a timed-out script may still run`)
	}
	p, tg := t.linkSession()
	pids := "." + t.Unique("mu-contract") + ".pids"
	t.Cleanup(func() {
		t.quietExec(p, tg, `for p in $(cat `+shq(pids)+` 2>/dev/null); do kill -9 "$p" 2>/dev/null; done; rm -f `+shq(pids))
	})
	r := t.exec(p, tg, `echo $$ > `+shq(pids)+`; sleep 60 & echo $! >> `+shq(pids)+
		`; (sleep 60; echo late) & echo $! >> `+shq(pids)+`; wait`, ".", time.Second)
	if r.ExitCode != nil {
		t.Failf("the script did not time out (exitCode %d)", *r.ExitCode)
	}
	// stopped: at once; stopping: within one grace (polled in the script).
	tries := 0
	if mode == protocol.RemoteStopping {
		tries = int((protocol.Grace + slack) / (100 * time.Millisecond))
	}
	check := fmt.Sprintf(`f=%s; [ -s "$f" ] || { echo "no pid file"; exit 2; }
i=0
while :; do
  alive=""
  for p in $(cat "$f"); do
    kill -0 "$p" 2>/dev/null || continue
    if [ -r "/proc/$p/stat" ]; then # a zombie is dead, only not reaped yet
      s=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -c1)
      [ "$s" = Z ] || [ "$s" = X ] || [ -z "$s" ] && continue
    fi
    alive="$alive $p"
  done
  [ -z "$alive" ] && exit 0
  [ $i -ge %d ] && { echo "still running:$alive"; exit 1; }
  i=$((i+1)); sleep 0.1
done`, shq(pids), tries)
	c := t.exec(p, tg, check, ".", execBudget)
	if c.ExitCode == nil || *c.ExitCode != 0 {
		t.Failf(`remoteOnTimeout is %q, but after the timed-out answer: %s`, mode, strings.TrimSpace(c.Stdout))
	}
}

// checkLinkFetch (link/fetch): link.fetch writes localRepo's FETCH_HEAD
// naming the remote repository's HEAD.
func checkLinkFetch(t *T) {
	d := t.Decl()
	if !d.Seams.Link.Fetch {
		t.Skipf("the link declares fetch: false (mu runs the profile's --fetch template)")
	}
	p, tg := t.linkSession()
	repo := t.Unique("mu-contract-fetch")
	t.Cleanup(func() { t.quietExec(p, tg, "rm -rf "+shq(repo)) })
	r := t.mustExec(p, tg, `git init -q `+shq(repo)+` && cd `+shq(repo)+
		` && git -c user.name=mu-contract -c user.email=contract@mu.invalid -c commit.gpgsign=false commit -q --allow-empty -m remote && git rev-parse HEAD`, ".")
	sha := strings.TrimSpace(r.Stdout)
	local := t.TempDir()
	t.git(local, "init", "-q")
	f, err := p.Fetch(t.Ctx(), tg, repo, local, execBudget)
	if err != nil {
		t.Failf("link.fetch: %v", err)
	}
	if f.ExitCode == nil || *f.ExitCode != 0 {
		t.Failf("link.fetch exited %s: %s", showCode(f.ExitCode), strings.TrimSpace(f.Stderr))
	}
	b, err := os.ReadFile(filepath.Join(local, ".git", "FETCH_HEAD"))
	if err != nil {
		t.Failf("link.fetch succeeded but left no FETCH_HEAD: %v", err)
	}
	if fields := strings.Fields(string(b)); len(fields) == 0 || fields[0] != sha {
		t.Failf("FETCH_HEAD names %q, the remote HEAD is %s", firstLine(string(b)), sha)
	}
}

// checkLinkPush (link/push): `link.push` creates the remote repository,
// which then holds `rev` (SKIP without `push`).
func checkLinkPush(t *T) { checkPush(t, false) }

// checkLinkPushIdempotent (link/push-idempotent): a second push of the same
// `rev` succeeds and leaves the repository's refs and objects untouched.
func checkLinkPushIdempotent(t *T) { checkPush(t, true) }

// checkPush: link.push creates the remote repository holding rev; again
// (twice) is a success that leaves it untouched.
func checkPush(t *T, twice bool) {
	d := t.Decl()
	if !d.Seams.Link.CanPush() {
		t.Skipf("the link declares no push")
	}
	p, tg := t.linkSession()
	local, sha := t.localRepo()
	repo := t.Unique("mu-contract-push")
	t.Cleanup(func() { t.quietExec(p, tg, "rm -rf "+shq(repo)) })
	push := func() {
		r, err := p.Push(t.Ctx(), tg, local, repo, sha, execBudget)
		if err != nil {
			t.Failf("link.push: %v", err)
		}
		if r.ExitCode == nil || *r.ExitCode != 0 {
			t.Failf("link.push exited %s: %s", showCode(r.ExitCode), strings.TrimSpace(r.Stderr))
		}
	}
	push()
	state := `git -C ` + shq(repo) + ` cat-file -t ` + sha + ` && git -C ` + shq(repo) +
		` for-each-ref --format='%(objectname) %(refname)' && git -C ` + shq(repo) + ` count-objects -v`
	before := t.exec(p, tg, state, ".", execBudget)
	if before.ExitCode == nil || *before.ExitCode != 0 || !strings.HasPrefix(before.Stdout, "commit") {
		t.Failf("after link.push the remote %s does not hold %s: %s%s", repo, sha, before.Stdout, before.Stderr)
	}
	if !twice {
		return
	}
	push()
	after := t.exec(p, tg, state, ".", execBudget)
	t.Check(after.Stdout == before.Stdout, "a second push of the same rev changed the remote repository:\nbefore: %s\nafter: %s",
		before.Stdout, after.Stdout)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
