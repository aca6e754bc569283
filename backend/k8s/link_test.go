package k8s_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/mu-org/mu-plugins/internal/testutil/gitrepo"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
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
	h := p.Acquire(t, "key-exec", nil).Handle
	sandboxtest.ExecStreams(t, p.Plugin, h)
	if r := p.Run(t, h, "pwd"); r.Stdout != "/home/mu\n" {
		t.Errorf("cwd .: %q", r.Stdout)
	}
	sandboxtest.ExecScriptIsData(t, p.Plugin, h)
	sandboxtest.ExecOversizedRefused(t, p.Plugin, h)
	sandboxtest.ExecConcurrent(t, p.Plugin, h, 10)
}

// remoteOnTimeout "stopped": when a run times out, nothing it started is
// left in the pod by the time the answer comes, not even what left its
// process group; a finished run's background leftovers are stopped too.
func TestExecTimeoutStopsEverything(t *testing.T) {
	p := start(t)
	h := p.Acquire(t, "key-to", nil).Handle
	sandboxtest.ExecTimeoutStops(t, p.Plugin, h, func(args ...string) string {
		return podExec(t, p, h, append([]string{"ps"}, args...)...)
	})
}

func TestPushAndFetchMoveCommits(t *testing.T) {
	p := start(t)
	h := p.Acquire(t, "key-git", nil).Handle
	dir, rev := sandboxtest.LocalRepo(t, 1)

	var r protocol.ExecResult
	push := sandboxtest.PushParams(h, dir, "work/repo", rev)
	r = sandboxtest.Must(t, p, protocol.MethodLinkPush, push)
	if sandboxtest.ExitCode(r) != "0" {
		t.Fatalf("push: code %s stderr %q", sandboxtest.ExitCode(r), r.Stderr)
	}
	if got := p.Run(t, h, "git -C work/repo cat-file -t "+rev); got.Stdout != "commit\n" {
		t.Errorf("remote after push: %q %q", got.Stdout, got.Stderr)
	}
	r = sandboxtest.Must(t, p, protocol.MethodLinkPush, push) // idempotent
	if sandboxtest.ExitCode(r) != "0" {
		t.Errorf("second push: code %s stderr %q", sandboxtest.ExitCode(r), r.Stderr)
	}
	// A commit made in the pod comes back with fetch.
	made := p.Run(t, h, "cd work/repo && git -c user.name=t -c user.email=t@t checkout -q -b w "+rev+
		" && echo y >g && git add g && git -c user.name=t -c user.email=t@t commit -q -m c1 && git rev-parse HEAD")
	if sandboxtest.ExitCode(made) != "0" {
		t.Fatalf("commit in the pod: %q", made.Stderr)
	}
	fetch := sandboxtest.FetchParams(h, dir, "work/repo")
	r = sandboxtest.Must(t, p, protocol.MethodLinkFetch, fetch)
	if sandboxtest.ExitCode(r) != "0" {
		t.Fatalf("fetch: code %s stderr %q", sandboxtest.ExitCode(r), r.Stderr)
	}
	if got := gitrepo.Git(t, dir, "rev-parse", "FETCH_HEAD"); got != strings.TrimSpace(made.Stdout) {
		t.Errorf("FETCH_HEAD %s, want %s", got, made.Stdout)
	}
}
