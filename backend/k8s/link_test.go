package k8s_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/mu-org/mu-plugins/internal/testutil"
	"github.com/mu-org/mu-plugins/protocol"
)

// podExec runs argv in the pod's container from outside the plugin (the
// test's own client), and returns its stdout.
func podExec(t testing.TB, p *plugin, pod string, argv ...string) string {
	t.Helper()
	cs := p.c.Client(t)
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.c.Namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "host", Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewWebSocketExecutor(p.c.RESTConfig(t), http.MethodGet, req.URL().String())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errb}); err != nil {
		t.Fatalf("exec %v in %s: %v %s", argv, pod, err, errb.String())
	}
	return out.String()
}

func TestExecRunsScriptsInThePod(t *testing.T) {
	p := start(t)
	h := p.acquire(t, "key-exec", nil).Handle
	r := p.run(t, h, "echo out; echo err >&2; exit 7")
	if exitCode(r) != "7" || r.Stdout != "out\n" || r.Stderr != "err\n" || r.Partial {
		t.Errorf("exec: %+v code %s", r, exitCode(r))
	}
	if r := p.run(t, h, "pwd"); r.Stdout != "/home/mu\n" {
		t.Errorf("cwd .: %q", r.Stdout)
	}
	script := "x='a \"b\" $HOME `c`'\nprintf '%s|' \"$x\"\ncat\nprintf 'end\\n\\n\\n'\n\n\n"
	if r := p.run(t, h, script); r.Stdout != "a \"b\" $HOME `c`|end\n\n\n" || exitCode(r) != "0" {
		t.Errorf("script bytes: %q code %s", r.Stdout, exitCode(r))
	}
	big := strings.Repeat("#", int(p.decl.Seams.Link.MaxScriptBytes)+1)
	if err := p.call(t, "link.exec", execParams(h, big, 10_000), nil); err == nil || err.Kind != "permanent" {
		t.Errorf("oversized script: %v", err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
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

// remoteOnTimeout "stopped": when a run times out, nothing it started is
// left in the pod by the time the answer comes, not even what left its
// process group; a finished run's background leftovers are stopped too.
func TestExecTimeoutStopsEverything(t *testing.T) {
	p := start(t)
	h := p.acquire(t, "key-to", nil).Handle
	script := `echo started; sleep 301 & setsid sleep 302 & (trap '' TERM HUP; sleep 303) & nohup sleep 304 >/dev/null 2>&1 & sleep 300`
	var r protocol.ExecResult
	p.must(t, "link.exec", execParams(h, script, 1500), &r)
	if r.ExitCode != nil {
		t.Fatalf("timed out run: exitCode %d, want null", *r.ExitCode)
	}
	if r.Stdout != "started\n" {
		t.Errorf("output before the timeout: %q", r.Stdout)
	}
	if ps := podExec(t, p, h, "ps", "-eo", "pid,args"); strings.Contains(ps, "sleep 30") {
		t.Errorf("the timed-out run left processes:\n%s", ps)
	}
	if r := p.run(t, h, "echo alive"); r.Stdout != "alive\n" {
		t.Errorf("after the timeout: %q", r.Stdout)
	}
	p.run(t, h, "sleep 305 & echo bg")
	if ps := podExec(t, p, h, "ps", "-eo", "args"); strings.Contains(ps, "sleep 305") {
		t.Errorf("a finished run left a background process:\n%s", ps)
	}
}

func TestPushAndFetchMoveCommits(t *testing.T) {
	p := start(t)
	h := p.acquire(t, "key-git", nil).Handle
	dir := filepath.Join(t.TempDir(), "local repo") // a space: ext:: escaping
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	g := func(args ...string) string { t.Helper(); return testutil.Git(t, dir, args...) }
	g("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	g("add", "f")
	g("commit", "-q", "-m", "c0")
	rev := g("rev-parse", "HEAD")

	var r protocol.ExecResult
	push := map[string]any{"deadline": deadline(), "target": hostTarget(h), "localRepo": dir, "remoteRepo": "work/repo", "rev": rev, "timeoutMs": 60_000}
	p.must(t, "link.push", push, &r)
	if exitCode(r) != "0" {
		t.Fatalf("push: code %s stderr %q", exitCode(r), r.Stderr)
	}
	if got := p.run(t, h, "git -C work/repo cat-file -t "+rev); got.Stdout != "commit\n" {
		t.Errorf("remote after push: %q %q", got.Stdout, got.Stderr)
	}
	p.must(t, "link.push", push, &r) // idempotent
	if exitCode(r) != "0" {
		t.Errorf("second push: code %s stderr %q", exitCode(r), r.Stderr)
	}
	// A commit made in the pod comes back with fetch.
	made := p.run(t, h, "cd work/repo && git -c user.name=t -c user.email=t@t checkout -q -b w "+rev+
		" && echo y >g && git add g && git -c user.name=t -c user.email=t@t commit -q -m c1 && git rev-parse HEAD")
	if exitCode(made) != "0" {
		t.Fatalf("commit in the pod: %q", made.Stderr)
	}
	fetch := map[string]any{"deadline": deadline(), "target": hostTarget(h), "localRepo": dir, "remoteCwd": "work/repo", "timeoutMs": 60_000}
	p.must(t, "link.fetch", fetch, &r)
	if exitCode(r) != "0" {
		t.Fatalf("fetch: code %s stderr %q", exitCode(r), r.Stderr)
	}
	if got := g("rev-parse", "FETCH_HEAD"); got != strings.TrimSpace(made.Stdout) {
		t.Errorf("FETCH_HEAD %s, want %s", got, made.Stdout)
	}
}
