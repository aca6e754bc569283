package k8s_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mu-org/mu-plugins/internal/testk8s"
	"github.com/mu-org/mu-plugins/internal/testutil/programs"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/testutil/tier"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The tests drive the built plugin binary through caller (testutil/drive),
// as mu does, against the project's real test cluster (internal/testk8s).

var runID = sandboxtest.RunID() // labels this test binary's pods: org.mu-plugins.testrun

func TestMain(m *testing.M) {
	tier.Main(m, "k8s", nil, cleanupRun)
}

// cleanupRun deletes every pod this test binary made (fences included).
func cleanupRun() {
	c, err := testk8s.Load(os.Getenv("MU_K8S_NAME"), os.Getenv("MU_K8S_STATE_ROOT"))
	if err != nil {
		return
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return
	}
	zero := int64(0)
	_ = cs.CoreV1().Pods(c.Namespace).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero},
		metav1.ListOptions{LabelSelector: "org.mu-plugins.testrun=" + runID})
}

func binPath(t testing.TB) string {
	t.Helper()
	return programs.BuildRace(t, "github.com/mu-org/mu-plugins/cmd/mu-plugin-k8s")
}

// plugin is mu-plugin-k8s as a test drives it (sandboxtest.Plugin), on
// cluster c.
type plugin struct {
	*sandboxtest.Plugin
	prefix string
	decl   protocol.InitializeResult
	c      *testk8s.Cluster
}

// start runs the plugin on the test cluster with a fresh prefix.
func start(t testing.TB, args ...string) *plugin {
	t.Helper()
	return startOn(t, sandboxtest.NewPrefix(), args...)
}

// pluginArgv is the plugin's argv on cluster c: its kubeconfig, context
// and namespace, the test image as uid 1000 (the image's user mu, whose
// USER is not numeric), the test labels.
func pluginArgv(t testing.TB, c *testk8s.Cluster, prefix string, args ...string) []string {
	return append([]string{binPath(t), "--kubeconfig", c.Kubeconfig, "--context", c.Context, "--namespace", c.Namespace,
		"--image", c.Image, "--run-as-user", "1000", "--prefix", prefix,
		"--label", "org.mu-plugins.test=1", "--label", "org.mu-plugins.testrun=" + runID}, args...)
}

// startOn runs the plugin with prefix (a second invocation of the same
// configuration), as mu does, and stops it with stdin's EOF at the end.
func startOn(t testing.TB, prefix string, args ...string) *plugin {
	t.Helper()
	c := testk8s.Ensure(t)
	sp := sandboxtest.Start(t, caller.Config{Name: "k8s", Argv: pluginArgv(t, c, prefix, args...)}, 3*time.Minute)
	return &plugin{Plugin: sp, prefix: prefix, decl: sp.Declaration(), c: c}
}

// pods lists this test binary's pods with label selector sel (and the
// run's label), optionally only those not being deleted.
func pods(t testing.TB, c *testk8s.Cluster, sel string) []corev1.Pod {
	t.Helper()
	if sel != "" {
		sel += ","
	}
	l, err := c.Client(t).CoreV1().Pods(c.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: sel + "org.mu-plugins.testrun=" + runID})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	return l.Items
}

// prefixed is the pods whose name starts with prefix.
func prefixed(all []corev1.Pod, prefix string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range all {
		if strings.HasPrefix(p.Name, prefix+"-") {
			out = append(out, p)
		}
	}
	return out
}

// keyHash is the plugin's name suffix for key: the first 16 bytes of its
// sha256, in hex.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}
