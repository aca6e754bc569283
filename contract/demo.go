package contract

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// Demo drives mu-plugin-fake (argv: its absolute path and arguments)
// through every seam the way mu does: handshake, host.acquire, link.exec,
// link.push and a worktree, job.start and its view, channel.send,
// channel.watch, a collect over link.fetch, job.stop, host.release, and
// mu's stop sequence. It prints a short account of each step to out. It
// needs no server; its local repository is a temp dir, removed at the end.
func Demo(ctx context.Context, argv []string, out io.Writer) error {
	d := &demo{ctx: ctx, out: out}
	tmp, err := os.MkdirTemp("", "mu-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	d.tmp = tmp
	return d.run(argv)
}

type demo struct {
	ctx context.Context
	out io.Writer
	tmp string
	p   *caller.Plugin

	// What the steps pass on, in order.
	decl    protocol.InitializeResult
	hostKey string
	host    protocol.Target // the acquired host
	local   string          // the caller's checkout
	jobKey  string
	job     protocol.Target // the job's agent
	start   protocol.JobStartResult
	view    *viewProc
}

func (d *demo) say(step, format string, args ...any) {
	fmt.Fprintf(d.out, "%-8s %s\n", step, fmt.Sprintf(format, args...))
}

func (d *demo) detail(text string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(d.out, "%-8s   | %s\n", "", l)
	}
}

// exec runs a script on the host and wants exit 0.
func (d *demo) exec(tg protocol.Target, script, cwd string) (protocol.ExecResult, error) {
	r, err := d.p.Exec(d.ctx, tg, script, cwd, 20*time.Second)
	if err != nil {
		return r, fmt.Errorf("link.exec: %w", err)
	}
	if r.ExitCode == nil || *r.ExitCode != 0 {
		return r, fmt.Errorf("link.exec %q exited %s: %s", script, showCode(r.ExitCode), strings.TrimSpace(r.Stderr))
	}
	return r, nil
}

func (d *demo) git(dir string, args ...string) (string, error) {
	full := append([]string{"-C", dir, "-c", "user.name=mu-demo", "-c", "user.email=demo@mu.invalid",
		"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)
	b, err := exec.CommandContext(d.ctx, "git", full...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(b)))
	}
	return strings.TrimSpace(string(b)), nil
}

// run starts the plugin, then takes every step in turn; the first that
// fails ends the demo.
func (d *demo) run(argv []string) error {
	if err := d.handshake(argv); err != nil {
		return err
	}
	defer d.p.Stop()
	for _, step := range []func() error{d.acquire, d.link, d.site, d.spawn, d.deliver, d.collect, d.end} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// handshake starts the plugin as mu does and names what it declared.
func (d *demo) handshake(argv []string) error {
	name := strings.TrimPrefix(filepath.Base(argv[0]), "mu-plugin-")
	start := time.Now()
	p, err := caller.Start(d.ctx, caller.Config{Name: name, Argv: argv, Need: []string{"link", "host", "job", "channel"}})
	if err != nil {
		return err
	}
	d.p = p
	decl := p.Declaration()
	d.decl = decl
	var seams []string
	for s, ok := range map[string]bool{"link": decl.Seams.Link != nil, "host": decl.Seams.Host != nil,
		"job": decl.Seams.Job != nil, "channel": decl.Seams.Channel != nil} {
		if ok {
			seams = append(seams, s)
		}
	}
	sort.Strings(seams)
	d.say("start", "mu starts %s in its own process group and sends initialize", filepath.Base(argv[0]))
	d.say("", "%s %s, instance %q, protocol %d, seams %s (in %s)", decl.Plugin.Name, decl.Plugin.Version,
		decl.Instance, decl.Protocol, strings.Join(seams, ", "), time.Since(start).Round(time.Millisecond))
	return nil
}

// acquire: the host.
func (d *demo) acquire() error {
	d.hostKey = "demo-host-" + randHex(4)
	res, err := caller.Invoke(d.ctx, d.p, protocol.MethodHostAcquire, protocol.AcquireParams{
		Base: protocol.Base{Target: protocol.Target{Host: protocol.HostRef{Name: "demo"}}}, Key: d.hostKey,
		Params: map[string]string{"ttl": "2h", "maxJobs": "4"}})

	if err != nil {
		return fmt.Errorf("host.acquire: %w", err)
	}
	d.say("acquire", "host.acquire key %s --param ttl=2h maxJobs=4 → handle %s", d.hostKey, res.Handle)
	if res.DeadlineAt != nil {
		d.say("", "facts: deadlineAt in %s, maxJobs %d", time.Until(time.UnixMilli(*res.DeadlineAt)).Round(time.Minute), deref(res.MaxJobs))
	}
	d.host = protocol.Target{Host: protocol.HostRef{Name: "demo", Handle: res.Handle, Instance: d.decl.Instance}}
	return nil
}

// link: a script, and one cut by its timeoutMs.
func (d *demo) link() error {
	r, err := d.exec(d.host, `echo "hello from $(pwd)"; echo "to stderr" >&2; exit 0`, ".")
	if err != nil {
		return err
	}
	d.say("exec", "link.exec → exit %d, stdout and stderr apart:", *r.ExitCode)
	d.detail("stdout: " + strings.TrimSpace(r.Stdout))
	d.detail("stderr: " + strings.TrimSpace(r.Stderr))
	r, err = d.p.Exec(d.ctx, d.host, "sleep 30", ".", time.Second)
	if err != nil {
		return fmt.Errorf("link.exec: %w", err)
	}
	d.say("", "link.exec `sleep 30` with timeoutMs 1000 → exitCode %s (remoteOnTimeout %q: nothing left running)",
		showCode(r.ExitCode), d.decl.Seams.Link.RemoteOnTimeout)
	return nil
}

// site: the caller's commit pushed to the host, and a worktree made from it.
func (d *demo) site() error {
	d.local = filepath.Join(d.tmp, "checkout")
	if err := os.MkdirAll(d.local, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d.local, "README"), []byte("a demo checkout\n"), 0o600); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "README"}, {"commit", "-q", "-m", "the caller's commit"}} {
		if _, err := d.git(d.local, args...); err != nil {
			return err
		}
	}
	sha, err := d.git(d.local, "rev-parse", "HEAD")
	if err != nil {
		return err
	}

	pr, err := d.p.Push(d.ctx, d.host, d.local, "repo", sha, 20*time.Second)
	if err != nil || pr.ExitCode == nil || *pr.ExitCode != 0 {
		return fmt.Errorf("link.push: %v %s", err, pr.Stderr)
	}
	d.say("push", "link.push %s → the host's repo (created): exit 0", sha[:7])
	if _, err := d.exec(d.host, "git -C repo worktree add -q --detach ../tree "+sha, "."); err != nil {
		return err
	}
	d.say("", "mu makes the agent's worktree from that commit (link.exec git worktree add)")
	return nil
}

// demoPrompt is the first turn's text.
const demoPrompt = "write a haiku about pipes"

// spawn: the job, and its view.
func (d *demo) spawn() error {
	d.jobKey = "demo-job-" + randHex(4)
	spec := protocol.JobSpec{Workstream: "demo", Name: "alice", Harness: "fake", Role: "full-access",
		Cmd: "fake-agent --model demo", CommandSource: "harness", Cwd: "tree", Env: map[string]string{"DEMO": "1"}}
	if d.atStart() {
		spec.FirstPrompt = &protocol.FirstPrompt{Text: demoPrompt, MsgID: "demo-msg-" + randHex(4)}
	}
	js, err := caller.Invoke(d.ctx, d.p, protocol.MethodJobStart, protocol.JobStartParams{Base: protocol.Base{Target: d.host}, Key: d.jobKey, Spec: spec})
	if err != nil {
		return fmt.Errorf("job.start: %w", err)
	}
	d.start = js
	d.say("spawn", "job.start demo/alice in tree → handle %s", js.Handle)
	d.job = d.host
	d.job.Job = &protocol.JobRef{Kind: d.decl.Seams.Job.Kind, Key: d.jobKey, Handle: js.Handle}
	d.job.Agent = &protocol.AgentRef{Workstream: "demo", Name: "alice", Incarnation: 1}
	d.view = startView(js.View)
	d.say("view", "mu runs the view's command in a pane, stdin from /dev/null: %s", clip(js.View.Command))
	return nil
}

func (d *demo) atStart() bool { return d.decl.Seams.Job.FirstTurn == protocol.FirstTurnAtStart }

// deliver: a delivery and its watch. An at-start kind's first prompt went
// with job.start, and its reply's baseline is the readiness.
func (d *demo) deliver() error {
	b := d.start.Baseline
	if d.atStart() {
		d.say("send", "the first prompt %q went with job.start (firstTurn at-start): baseline runs %d", demoPrompt, deref(b).Runs)
	} else {
		var err error
		b, err = caller.Invoke(d.ctx, d.p, protocol.MethodChannelBaseline, protocol.Base{Target: d.job})
		if err != nil || b == nil {
			return fmt.Errorf("channel.baseline: %v (or null)", err)
		}
		d.say("ready", "channel.baseline → runs %d, incarnation %s", b.Runs, b.Incarnation)
		sr, err := caller.Invoke(d.ctx, d.p, protocol.MethodChannelSend, protocol.SendParams{
			Base: protocol.Base{Target: d.job}, Text: demoPrompt, MsgID: "demo-msg-" + randHex(4), Mode: protocol.ModeFollowUp})

		if err != nil {
			return fmt.Errorf("channel.send: %w", err)
		}
		d.say("send", "channel.send %q → ack %s, baseline %d", demoPrompt, sr.Ack, deref(sr.Baseline))
	}
	if b == nil {
		return fmt.Errorf("job.start: an at-start kind's reply carries no baseline")
	}
	w, err := d.p.Watch(d.ctx, protocol.WatchParams{Base: protocol.Base{Target: d.job}, AfterRuns: protocol.Int64(b.Runs)}, 0)
	if err != nil {
		return fmt.Errorf("channel.watch: %w", err)
	}
	d.say("watch", "channel.watch afterRuns %d → the reply (now %s), then exactly one notification:", b.Runs, w.Result.Initial.Status)
	wctx, cancel := context.WithTimeout(d.ctx, time.Minute)
	n, err := w.Wait(wctx)
	cancel()
	if err != nil {
		return fmt.Errorf("channel.watch: %w", err)
	}
	if n.Settled == nil {
		return fmt.Errorf("channel.watch: %s", n.Method)
	}
	d.say("", "%s: runs %d, lastText %q", n.Method, n.Settled.Observation.Runs, n.Settled.Observation.LastText)
	return nil
}

// collect: the agent's commit comes back over link.fetch.
func (d *demo) collect() error {
	if _, err := d.exec(d.host, `printf 'pipes hum in the dark\n' > haiku.txt && git add haiku.txt && git -c user.name=alice -c user.email=alice@mu.invalid -c commit.gpgsign=false commit -q -m "alice: a haiku"`, "tree"); err != nil {
		return err
	}
	fr, err := d.p.Fetch(d.ctx, d.host, "tree", d.local, 20*time.Second)
	if err != nil || fr.ExitCode == nil || *fr.ExitCode != 0 {
		return fmt.Errorf("link.fetch: %v %s", err, fr.Stderr)
	}
	got, err := d.git(d.local, "log", "-1", "--format=%h %s", "FETCH_HEAD")
	if err != nil {
		return err
	}
	d.say("collect", "link.fetch tree → the checkout's FETCH_HEAD is %s", got)
	return nil
}

// end: stop, release, mu's stop sequence.
func (d *demo) end() error {
	if _, err := caller.Invoke(d.ctx, d.p, protocol.MethodJobStop, protocol.KeyParams{Base: protocol.Base{Target: d.job}, Key: d.jobKey}); err != nil {
		return fmt.Errorf("job.stop: %w", err)
	}
	st, err := caller.Invoke(d.ctx, d.p, protocol.MethodJobStatus, protocol.Base{Target: d.job})
	if err != nil {
		return fmt.Errorf("job.status: %w", err)
	}
	d.say("stop", "job.stop → null; job.status now %s", st.State)
	d.say("", "what the view showed:")
	d.detail(d.view.wait())
	if _, err := caller.Invoke(d.ctx, d.p, protocol.MethodHostRelease, protocol.KeyParams{Base: protocol.Base{Target: d.host}, Key: d.hostKey}); err != nil {
		return fmt.Errorf("host.release: %w", err)
	}
	d.say("release", "host.release %s → null", d.hostKey)
	rep := d.p.Stop()
	how := "killed"
	if rep.Graceful {
		how = "emptied by itself"
	}
	d.say("exit", "mu's stop: $/cancel for pending calls, shutdown, stdin closed; the plugin's group %s in %s",
		how, rep.Waited.Round(time.Millisecond))
	return nil
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

// viewProc is the job's view, run as mu runs it (stdin from /dev/null).
type viewProc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func (v *viewProc) Write(b []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.out.Write(b)
}

func startView(view protocol.View) *viewProc {
	v := &viewProc{done: make(chan struct{})}
	v.cmd = exec.Command("/bin/sh", "-c", view.Command)
	v.cmd.Dir = view.Cwd
	v.cmd.Env = os.Environ()
	for k, val := range view.Env {
		v.cmd.Env = append(v.cmd.Env, k+"="+val)
	}
	v.cmd.Stdout, v.cmd.Stderr = v, v
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := v.cmd.Start(); err != nil {
		_, _ = v.Write([]byte("the view did not start: " + err.Error()))
		close(v.done)
		return v
	}
	go func() { _ = v.cmd.Wait(); close(v.done) }()
	return v
}

// wait gives the view a moment to print the job's end, then ends it.
func (v *viewProc) wait() string {
	select {
	case <-v.done:
	case <-time.After(3 * time.Second):
		_ = syscall.Kill(-v.cmd.Process.Pid, syscall.SIGKILL)
		<-v.done
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.out.String()
}
