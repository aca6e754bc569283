package k8s

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mu-org/mu-plugins/protocol"
)

// kubeconfig writes a kubeconfig with one cluster (server, CA text) and
// the named contexts (context → namespace), current being the current one.
func kubeconfig(t *testing.T, server, ca, current string, contexts map[string]string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server + "\n")
	if ca != "" {
		b.WriteString("    certificate-authority-data: " + ca + "\n")
	}
	b.WriteString("users:\n- name: u\n  user: {token: secret-token}\ncontexts:\n")
	for name, ns := range contexts {
		b.WriteString("- name: " + name + "\n  context: {cluster: c, user: u")
		if ns != "" {
			b.WriteString(", namespace: " + ns)
		}
		b.WriteString("}\n")
	}
	if current != "" {
		b.WriteString("current-context: " + current + "\n")
	}
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const caA, caB = "Y2EtYQ==", "Y2EtYg==" // base64 of "ca-a", "ca-b"

func TestResolveTargetAsKubectl(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no ~/.kube/config
	first := kubeconfig(t, "https://10.0.0.1:6443", caA, "a", map[string]string{"a": "ns-a", "b": "ns-b", "c": ""})
	second := kubeconfig(t, "https://10.0.0.9:6443", caB, "b", map[string]string{"a": "other", "b": "ns-b2", "z": "ns-z"})
	t.Setenv("KUBECONFIG", first+string(filepath.ListSeparator)+second)

	for _, c := range []struct{ ctx, ns, wantHost, wantNS, wantCtx string }{
		{"", "", "https://10.0.0.1:6443", "ns-a", "a"}, // the first file's current context wins
		{"b", "", "https://10.0.0.1:6443", "ns-b", "b"},
		{"c", "", "https://10.0.0.1:6443", "default", "c"},
		{"", "mine", "https://10.0.0.1:6443", "mine", "a"},
		{"z", "", "https://10.0.0.1:6443", "ns-z", "z"}, // a context of the second file, on the first's cluster "c"
	} {
		tg, err := ResolveTarget("", c.ctx, c.ns)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if tg.REST.Host != c.wantHost || tg.Namespace != c.wantNS || tg.Context != c.wantCtx || len(tg.Files) != 2 {
			t.Errorf("context %q ns %q: host %s ns %s context %s files %v", c.ctx, c.ns, tg.REST.Host, tg.Namespace, tg.Context, tg.Files)
		}
	}
	if _, err := ResolveTarget("", "nosuch", ""); err == nil {
		t.Errorf("an unknown --context resolved")
	}
	// --kubeconfig wins over KUBECONFIG.
	tg, err := ResolveTarget(second, "", "")
	if err != nil {
		t.Fatalf("--kubeconfig: %v", err)
	}
	if tg.REST.Host != "https://10.0.0.9:6443" || tg.Namespace != "ns-b2" || tg.Context != "b" {
		t.Errorf("--kubeconfig: %+v %v", tg, err)
	}
	// The sub-commands' environment names the same cluster and namespace.
	env := tg.Env()
	if env["KUBECONFIG"] != second || env[envNamespace] != tg.Namespace || env[envContext] != "b" {
		t.Errorf("Env: %v", env)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	pin, err := pinnedTarget()
	if err != nil || pin.REST.Host != tg.REST.Host || pin.Namespace != tg.Namespace {
		t.Errorf("pinned: %+v %v", pin, err)
	}
}

func TestInstanceIsTheClusterAndNamespace(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	inst := func(server, ca, ns string) string {
		t.Helper()
		tg, err := ResolveTarget(kubeconfig(t, server, ca, "a", map[string]string{"a": ns}), "", "")
		if err != nil {
			t.Fatal(err)
		}
		in, err := tg.Instance()
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	base := inst("https://127.0.0.1:6443", caA, "ns1")
	if !strings.HasPrefix(base, "k8s-") || len(base) > 128 {
		t.Errorf("instance %q", base)
	}
	if got := inst("https://localhost:7443", caA, "ns1"); got != base {
		t.Errorf("another URL of the same cluster: %q, want %q", got, base)
	}
	if inst("https://127.0.0.1:6443", caB, "ns1") == base {
		t.Errorf("another CA (cluster) has the same instance")
	}
	if inst("https://127.0.0.1:6443", caA, "ns2") == base {
		t.Errorf("another namespace has the same instance")
	}
	if inst("https://a:1", "", "ns1") == inst("https://b:1", "", "ns1") {
		t.Errorf("without a CA the host must tell clusters apart")
	}
}

func TestParams(t *testing.T) {
	s, err := parseParams(map[string]string{}, Config{Image: "img"})
	if err != nil || s.Limits.Cpu().String() != DefaultCPU || s.Limits.Memory().String() != DefaultMemory ||
		s.Requests.Cpu().String() != DefaultCPURequest || s.PullPolicy != corev1.PullIfNotPresent {
		t.Errorf("defaults: %+v %v", s, err)
	}
	s, err = parseParams(map[string]string{"nodeSelector": "disk=ssd,zone=a", "runAsUser": "1000", "serviceAccount": "agent",
		"runtimeClass": "gvisor", "cpu": "500m", "cpuRequest": "100m", "ttl": "2h"}, Config{Image: "img"})
	if err != nil || s.NodeSelector["zone"] != "a" || s.RunAsUser != 1000 || s.ServiceAccount != "agent" || s.RuntimeClass != "gvisor" {
		t.Errorf("params: %+v %v", s, err)
	}
	for _, bad := range []map[string]string{
		{"cpu": "lots"}, {"memory": "-1Gi"}, {"nodeSelector": "noequals"}, {"runAsUser": "0"}, {"pullPolicy": "Sometimes"},
		{"serviceAccount": "Bad_Name"}, {"ttl": "0s"}, {"unknown": "x"}, {"cpu": "1", "cpuRequest": "2"},
	} {
		_, err := parseParams(bad, Config{Image: "img"})
		var pe *protocol.Error
		if err == nil || !asErr(err, &pe) || pe.Kind != protocol.Permanent {
			t.Errorf("%v: %v, want permanent", bad, err)
		}
	}
	if _, err := parseParams(nil, Config{}); err == nil || !strings.Contains(err.Error(), "no image") {
		t.Errorf("no image: %v", err)
	}
}

func asErr(err error, pe **protocol.Error) bool {
	e, ok := err.(*protocol.Error)
	*pe = e
	return ok
}

func TestHostPodIsSafe(t *testing.T) {
	b := &Backend{cfg: Config{Prefix: "mu", Labels: map[string]string{"team": "x"}}, instance: "k8s-x"}
	s, _ := parseParams(map[string]string{"ttl": "1h"}, Config{Image: "img", RunAsUser: 1000})
	pod := b.hostPod(b.podName("k"), "k", s, nil)
	sp, c := pod.Spec, pod.Spec.Containers[0]
	if sp.HostNetwork || sp.HostPID || sp.HostIPC || len(sp.Volumes) > 0 || *sp.AutomountServiceAccountToken ||
		*c.SecurityContext.Privileged || *c.SecurityContext.AllowPrivilegeEscalation || c.SecurityContext.Capabilities.Drop[0] != "ALL" ||
		!*sp.SecurityContext.RunAsNonRoot || *sp.SecurityContext.RunAsUser != 1000 || c.Resources.Limits.Cpu().IsZero() ||
		*sp.ActiveDeadlineSeconds < 3600 || pod.Labels["team"] != "x" || pod.Labels[LabelInstance] != "k8s-x" {
		t.Errorf("pod: %+v", pod)
	}
	if n := b.podName("k"); len(n) > 63 || n != b.podName("k") || n == b.podName("k2") {
		t.Errorf("pod name %q", n)
	}
	f := b.fencePod("n", "k")
	if len(f.Spec.SchedulingGates) != 1 || f.Labels[LabelFence] != "1" {
		t.Errorf("fence: %+v", f)
	}
}

func TestHealth(t *testing.T) {
	now := metav1.Now()
	waiting := func(reason string) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "host",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}}
	}
	for name, c := range map[string]struct {
		st   corev1.PodStatus
		del  bool
		want podHealth
	}{
		"ready": {st: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "host", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}, want: podUp},
		"pending":         {st: corev1.PodStatus{Phase: corev1.PodPending}, want: podComing},
		"image pull":      {st: waiting("ImagePullBackOff"), want: podStuck},
		"never pull":      {st: waiting("ErrImageNeverPull"), want: podStuck},
		"config error":    {st: waiting("CreateContainerConfigError"), want: podStuck},
		"creating":        {st: waiting("ContainerCreating"), want: podComing},
		"evicted":         {st: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}, want: podGone},
		"deadline":        {st: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded"}, want: podGone},
		"being deleted":   {st: corev1.PodStatus{Phase: corev1.PodRunning}, del: true, want: podUnclear},
		"unschedulable":   {st: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}}, want: podStuck},
		"container ended": {st: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "host", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}}}, want: podGone},
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: c.st}
		if c.del {
			p.DeletionTimestamp = &now
		}
		if got, why := health(p); got != c.want || (got != podUp && why == "") {
			t.Errorf("%s: %v %q, want %v", name, got, why, c.want)
		}
	}
}
