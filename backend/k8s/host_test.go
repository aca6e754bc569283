package k8s_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mu-org/mu-plugins/internal/testk8s"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/testutil/words"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

func TestDeclarationAndInstance(t *testing.T) {
	p := start(t)
	sandboxtest.Declaration(t, p.decl, "k8s", "k8s")
	in := p.decl.Instance
	if !strings.HasPrefix(in, "k8s-") {
		t.Errorf("instance %q", in)
	}
	// The same cluster through another address (a copy of the kubeconfig
	// naming the API server as localhost) is the same instance; another
	// namespace is another; --instance overrides.
	c := p.c
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range cfg.Clusters {
		cl.Server = strings.Replace(cl.Server, "127.0.0.1", "localhost", 1)
	}
	other := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, other); err != nil {
		t.Fatal(err)
	}
	q := startWith(t, []string{"--kubeconfig", other, "--context", c.Context, "--namespace", c.Namespace})
	if q.decl.Instance != in {
		t.Errorf("instance through localhost %q, want %q (the cluster's identity, not its URL)", q.decl.Instance, in)
	}
	if r := startWith(t, []string{"--kubeconfig", other, "--namespace", "elsewhere"}); r.decl.Instance == in {
		t.Errorf("another namespace has the same instance %q", in)
	}
	if r := startWith(t, []string{"--kubeconfig", other, "--instance", "eu-1"}); r.decl.Instance != "eu-1" {
		t.Errorf("--instance: got %q", r.decl.Instance)
	}
	// KUBECONFIG with several files and the current context, as kubectl:
	// a file without the context first, the cluster's second.
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startEnv(t, []string{"KUBECONFIG=" + empty + string(filepath.ListSeparator) + c.Kubeconfig}, nil)
	if r.decl.Instance != in {
		t.Errorf("through KUBECONFIG: instance %q, want %q", r.decl.Instance, in)
	}
}

// startWith runs the plugin with these cluster flags instead of the test
// cluster's.
func startWith(t *testing.T, clusterFlags []string) *plugin {
	return startEnv(t, nil, clusterFlags)
}

// startEnv runs the plugin with env added and clusterFlags as its only
// cluster flags.
func startEnv(t *testing.T, env, clusterFlags []string) *plugin {
	t.Helper()
	c := testk8s.Ensure(t)
	argv := append([]string{binPath(t), "--image", c.Image, "--run-as-user", "1000", "--prefix", sandboxtest.NewPrefix(),
		"--label", "org.mu-plugins.testrun=" + runID}, clusterFlags...)
	sp := sandboxtest.Start(t, caller.Config{Name: "k8s", Argv: argv, Env: env}, 3*time.Minute)
	return &plugin{Plugin: sp, decl: sp.Declaration(), c: c}
}

func TestAcquireLookupStatusRelease(t *testing.T) {
	p := start(t)
	cs := p.c.Client(t)
	res, params := sandboxtest.AcquireWithTerms(t, p.Plugin, "key-1", map[string]string{"cpu": "500m", "memory": "256Mi"})

	// The pod: the safe defaults and the params' limits.
	pod, err := cs.CoreV1().Pods(p.c.Namespace).Get(context.Background(), res.Handle, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sp := pod.Spec
	ctr := sp.Containers[0]
	sc := ctr.SecurityContext
	switch {
	case sp.HostNetwork || sp.HostPID || sp.HostIPC || len(sp.Volumes) != 0:
		t.Errorf("host namespaces or volumes: %+v", sp)
	case sp.AutomountServiceAccountToken == nil || *sp.AutomountServiceAccountToken:
		t.Errorf("the service account token is mounted")
	case sc == nil || sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("privilege: %+v", sc)
	case sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}):
		t.Errorf("capabilities: %+v", sc.Capabilities)
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		t.Errorf("runAsNonRoot is not set")
	case ctr.Resources.Limits.Cpu().String() != "500m" || ctr.Resources.Limits.Memory().String() != "256Mi":
		t.Errorf("limits %v", ctr.Resources.Limits)
	case sp.ActiveDeadlineSeconds == nil || *sp.ActiveDeadlineSeconds < 7200:
		t.Errorf("activeDeadlineSeconds %v for ttl 2h", sp.ActiveDeadlineSeconds)
	}
	if r := p.Run(t, res.Handle, "id -u; grep CapEff /proc/self/status"); sandboxtest.ExitCode(r) != "0" || !strings.HasPrefix(r.Stdout, "1000\nCapEff:\t0000000000000000") {
		t.Errorf("in the pod: %s %q %q", sandboxtest.ExitCode(r), r.Stdout, r.Stderr)
	}

	q := startOn(t, p.prefix)
	again := sandboxtest.Must(t, q, protocol.MethodHostAcquire, sandboxtest.AcquireParams("key-1", params))
	if !reflect.DeepEqual(again, res) {
		t.Errorf("second acquire: %+v, want %+v", again, res)
	}
	if n := len(prefixed(pods(t, p.c, ""), p.prefix)); n != 1 {
		t.Errorf("%d pods for key-1, want 1", n)
	}
	if err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams("key-1", map[string]string{"ttl": "1h"})); err == nil || err.Kind != "permanent" {
		t.Errorf("acquire with other params: %v, want a permanent error", err)
	}

	st := sandboxtest.Must(t, p, protocol.MethodHostStatus, sandboxtest.StatusParams(res.Handle))
	if st.State != protocol.HostUp || string(st.Facts["maxJobs"]) != "3" {
		t.Errorf("status: %s", words.JSON(st))
	}

	sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("key-1"))
	if n := len(prefixed(pods(t, p.c, ""), p.prefix)); n != 0 {
		t.Errorf("%d pods left after release", n)
	}
	sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("key-1")) // idempotent
	gone := sandboxtest.Must(t, p, protocol.MethodHostStatus, sandboxtest.StatusParams(res.Handle))
	if gone.State != "gone" {
		t.Errorf("status after release: %+v", gone)
	}
	lk := p.Lookup(t, "key-1", false)
	if !lk.None {
		t.Errorf("lookup after release: %+v", lk)
	}
}

// A fenced lookup's none is final: a late acquire of the key fails and
// makes no pod; the fence stays through a release.
func TestFencedNoneIsFinal(t *testing.T) {
	p := start(t)
	sandboxtest.FencedNone(t, p.Plugin, "fenced")
	sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("fenced"))
	left := prefixed(pods(t, p.c, ""), p.prefix)
	if len(left) != 1 || left[0].Labels["org.mu-plugins/fence"] != "1" || left[0].Spec.NodeName != "" {
		t.Errorf("want the one unscheduled fence left, got %d pods", len(left))
	}
}

// An image that cannot be had is a hand-back with a remedy, and leaves no
// pod.
func TestUnpullableImageIsHumanAndLeavesNothing(t *testing.T) {
	p := start(t)
	err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams("noimage", map[string]string{"image": "mu-plugins.invalid/none:1", "pullPolicy": "Never"}))
	if err == nil || err.Kind != "human" || err.Remedy == "" || !strings.Contains(err.Remedy, "image") {
		t.Fatalf("acquire of a missing image: %+v, want human with a remedy naming the image", err)
	}
	for _, pod := range prefixed(pods(t, p.c, ""), p.prefix) {
		if pod.DeletionTimestamp == nil {
			t.Errorf("pod %s left behind", pod.Name)
		}
	}
	bad := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams("badparam", map[string]string{"cpu": "lots"}))
	if bad == nil || bad.Kind != "permanent" || !strings.Contains(bad.Message, "known params") {
		t.Errorf("a malformed param: %+v", bad)
	}
}
