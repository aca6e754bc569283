package testk8s

import (
	"context"
	"net/url"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// A pod outlives a restart of the kubelet (the same container, not
// restarted, still exec-able), and the API server comes back after a
// crash: what the plugin's drills rely on.
func TestComponentsStopAndStartAgain(t *testing.T) {
	c := Ensure(t)
	cs := c.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	pod := startPod(ctx, t, cs, c)
	before, err := cs.CoreV1().Pods(c.Namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ws := func(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
		return remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	}

	c.Restart(t, "kubelet")
	after, err := cs.CoreV1().Pods(c.Namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, a := before.Status.ContainerStatuses[0], after.Status.ContainerStatuses[0]
	if a.ContainerID != b.ContainerID || a.RestartCount != 0 {
		t.Errorf("after the kubelet's restart: container %s (restarts %d), want %s unrestarted", a.ContainerID, a.RestartCount, b.ContainerID)
	}
	if out, _, err := execIn(ctx, cs, c.RESTConfig(t), ws, c.Namespace, pod, "", "echo", "still here"); err != nil || out != "still here\n" {
		t.Errorf("exec after the kubelet's restart: %q, %v", out, err)
	}

	c.Kill(t, "kube-apiserver")
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	_, err = cs.CoreV1().Pods(c.Namespace).Get(short, pod, metav1.GetOptions{})
	cancelShort()
	if err == nil {
		t.Fatal("a Get with the API server killed succeeded")
	}
	c.Start(t, "kube-apiserver")
	if _, err := cs.CoreV1().Pods(c.Namespace).Get(ctx, pod, metav1.GetOptions{}); err != nil {
		t.Fatalf("Get after the API server's start: %v", err)
	}
}
