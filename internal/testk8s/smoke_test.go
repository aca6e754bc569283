package testk8s

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
)

// The cluster runs a pod of the test image, execs into it over the
// pods/exec subresource (WebSocket, SPDY, and the WebSocket-then-SPDY
// fallback a client should use) and deletes it.
func TestPodRunsExecsAndIsDeleted(t *testing.T) {
	c := Ensure(t)
	cs := c.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	pod := startPod(ctx, t, cs, c)

	cfg := c.RESTConfig(t)
	executors := map[string]func(*rest.Config, *url.URL) (remotecommand.Executor, error){
		"websocket": func(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
			return remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
		},
		"spdy": func(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
			return remotecommand.NewSPDYExecutor(cfg, "POST", u)
		},
		"fallback": func(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
			ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
			if err != nil {
				return nil, err
			}
			spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
			if err != nil {
				return nil, err
			}
			return remotecommand.NewFallbackExecutor(ws, spdy, httpstream.IsUpgradeFailure)
		},
	}
	for name, mk := range executors {
		t.Run(name, func(t *testing.T) {
			script := `cat; echo to-stderr >&2; id -un; tmux -V >/dev/null && git --version >/dev/null && echo tools; exit 7`
			stdout, stderr, err := execIn(ctx, cs, cfg, mk, c.Namespace, pod, "hello over stdin\n", "sh", "-c", script)
			var ee utilexec.ExitError
			if !errors.As(err, &ee) || ee.ExitStatus() != 7 {
				t.Fatalf("exec: err %v, want exit status 7 (stdout %q, stderr %q)", err, stdout, stderr)
			}
			if want := "hello over stdin\nmu\ntools\n"; stdout != want {
				t.Errorf("stdout %q, want %q", stdout, want)
			}
			if stderr != "to-stderr\n" {
				t.Errorf("stderr %q, want %q", stderr, "to-stderr\n")
			}
			stdout, _, err = execIn(ctx, cs, cfg, mk, c.Namespace, pod, "", "true")
			if err != nil || stdout != "" {
				t.Errorf("exec true: %q, %v; want no output and no error", stdout, err)
			}
		})
	}

	if err := cs.CoreV1().Pods(c.Namespace).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete %s: %v", pod, err)
	}
	var err error
	if !waitfor.PollContext(ctx, 200*time.Millisecond, func() bool {
		_, err = cs.CoreV1().Pods(c.Namespace).Get(ctx, pod, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}) {
		t.Fatalf("pod %s still there after delete: %v", pod, err)
	}
}

// startPod creates a pod of the test image whose PID 1 exits on TERM (a
// `sleep infinity` would hold the deletion for its whole grace period) and
// waits until it is Ready. The test's cleanup deletes it at once if the
// test ends early.
func startPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, c *Cluster) string {
	t.Helper()
	no := false
	spec := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "testk8s-smoke-", Labels: map[string]string{Label: "1"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:            "main",
				Image:           c.Image,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"sh", "-c", "trap 'exit 0' TERM; sleep infinity & wait"},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no},
			}},
		},
	}
	created, err := cs.CoreV1().Pods(c.Namespace).Create(ctx, spec, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	name := created.Name
	t.Cleanup(func() {
		zero := int64(0)
		_ = cs.CoreV1().Pods(c.Namespace).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	w, err := cs.CoreV1().Pods(c.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion: created.ResourceVersion,
	})
	if err != nil {
		t.Fatalf("watch pod %s: %v", name, err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return name
			}
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			t.Fatalf("pod %s ended: %s %s", name, p.Status.Phase, p.Status.Message)
		}
	}
	t.Fatalf("pod %s not Ready before the deadline: %v (%s)", name, ctx.Err(), events(cs, c.Namespace, name))
	return ""
}

// execIn runs argv in the pod's container through the executor mk makes,
// with stdin (none when empty), and returns stdout and stderr.
func execIn(ctx context.Context, cs kubernetes.Interface, cfg *rest.Config,
	mk func(*rest.Config, *url.URL) (remotecommand.Executor, error),
	ns, pod, stdin string, argv ...string) (string, string, error) {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: "main", Command: argv, Stdin: stdin != "", Stdout: true, Stderr: true,
		}, scheme.ParameterCodec)
	ex, err := mk(cfg, req.URL())
	if err != nil {
		return "", "", err
	}
	var stdout, stderr bytes.Buffer
	opts := remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}
	if stdin != "" {
		opts.Stdin = strings.NewReader(stdin)
	}
	err = ex.StreamWithContext(ctx, opts)
	return stdout.String(), stderr.String(), err
}

func events(cs kubernetes.Interface, ns, pod string) string {
	evs, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", pod).String(),
	})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, e := range evs.Items {
		b.WriteString(e.Reason + ": " + e.Message + "; ")
	}
	return b.String()
}

// A cluster that is not up fails with how to bring it up, whether its files
// are missing or its API server does not answer.
func TestNotUpSaysHowToBringItUp(t *testing.T) {
	root := t.TempDir()
	_, err := Load("nosuch", root)
	if err == nil || !strings.Contains(err.Error(), "integration/k8s/up.sh nosuch") {
		t.Fatalf("Load of a missing cluster: %v, want the up.sh remedy", err)
	}

	dir := filepath.Join(root, "stale")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	// An API server address nothing listens on (port 1 on loopback).
	kcText := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n" +
		"users:\n- name: u\n  user: {}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n"
	env := "MU_K8S_KUBECONFIG=" + kc + "\nMU_K8S_NAMESPACE=ns\nMU_K8S_IMAGE=img\nMU_K8S_NODE=node\nMU_K8S_SERVER=https://127.0.0.1:1\n"
	if err := os.WriteFile(kc, []byte(kcText), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load("stale", root)
	if err == nil || !strings.Contains(err.Error(), "does not answer") || !strings.Contains(err.Error(), "integration/k8s/up.sh stale") {
		t.Fatalf("Load of a cluster that does not answer: %v, want 'does not answer' and the up.sh remedy", err)
	}
}
