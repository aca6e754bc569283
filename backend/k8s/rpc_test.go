package k8s_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mu-org/mu-plugins/internal/testk8s"
	"github.com/mu-org/mu-plugins/internal/testutil"
	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// The tests drive the built plugin binary through caller (testutil/drive),
// as mu does, against the project's real test cluster (internal/testk8s).

var runID string // labels this test binary's pods: org.mu-plugins.testrun

func TestMain(m *testing.M) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	runID = hex.EncodeToString(b[:])
	testutil.Main(m, nil, cleanupRun)
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
	return testutil.BuildRace(t, "github.com/mu-org/mu-plugins/cmd/mu-plugin-k8s")
}

// plugin is mu-plugin-k8s as a test drives it.
type plugin struct {
	*drive.Plugin
	prefix string
	decl   protocol.InitializeResult
	c      *testk8s.Cluster
}

func newPrefix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "mutest-" + hex.EncodeToString(b[:])
}

// start runs the plugin on the test cluster with a fresh prefix.
func start(t testing.TB, args ...string) *plugin {
	t.Helper()
	return startOn(t, newPrefix(), args...)
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
	dp := drive.Start(t, caller.Config{Name: "k8s", Argv: pluginArgv(t, c, prefix, args...),
		SkipParamsCheck: true, Retries: -1, HandshakeTimeout: 30 * time.Second, StopGrace: 10 * time.Second})
	dp.Budget = 3 * time.Minute
	p := &plugin{Plugin: dp, prefix: prefix, decl: dp.Declaration(), c: c}
	t.Cleanup(func() { p.stop(t) })
	return p
}

func (p *plugin) stop(t testing.TB) {
	if rep := p.CloseStdin(); rep.LeaderKilled() {
		t.Errorf("the plugin did not exit within 10 s of stdin EOF")
	}
}

func (p *plugin) call(t testing.TB, method string, params any, out any) *caller.RemoteError {
	t.Helper()
	res, re := drive.Try[json.RawMessage](t, p.Plugin, method, params)
	if re == nil && out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			t.Fatalf("%s: decoding %s: %v", method, res, err)
		}
	}
	return re
}

func (p *plugin) must(t testing.TB, method string, params any, out any) {
	t.Helper()
	if err := p.call(t, method, params, out); err != nil {
		t.Fatalf("%s: %v\n%s", method, err, drive.Tail(p.Stderr.String()))
	}
}

// sendAway sends a request whose answer may never come.
func (p *plugin) sendAway(method string, params any) {
	go p.Call(context.Background(), method, params, p.Budget)
}

// kill SIGKILLs the plugin and waits until it is gone.
func (p *plugin) kill() {
	_ = syscall.Kill(p.Pgid(), syscall.SIGKILL)
	<-p.Done()
}

func deadline() int64 { return time.Now().Add(3 * time.Minute).UnixMilli() }

func hostTarget(handle string) map[string]any {
	h := map[string]any{"name": "box"}
	if handle != "" {
		h["handle"] = handle
	}
	return map[string]any{"host": h}
}

func acquireParams(key string, params map[string]string) map[string]any {
	if params == nil {
		params = map[string]string{}
	}
	return map[string]any{"deadline": deadline(), "target": hostTarget(""), "key": key, "params": params}
}

func keyParams(key string) map[string]any {
	return map[string]any{"deadline": deadline(), "target": hostTarget(""), "key": key}
}

func lookupParams(key string, fence bool) map[string]any {
	return map[string]any{"deadline": deadline(), "target": hostTarget(""), "key": key, "fence": fence}
}

func statusParams(handle string) map[string]any {
	return map[string]any{"deadline": deadline(), "target": hostTarget(handle)}
}

func execParams(handle, script string, timeoutMs int64) map[string]any {
	return map[string]any{"deadline": time.Now().Add(time.Duration(timeoutMs)*time.Millisecond + 30*time.Second).UnixMilli(),
		"target": hostTarget(handle), "script": script, "cwd": ".", "timeoutMs": timeoutMs}
}

// acquire acquires a host for key.
func (p *plugin) acquire(t testing.TB, key string, params map[string]string) protocol.AcquireResult {
	t.Helper()
	var res protocol.AcquireResult
	p.must(t, "host.acquire", acquireParams(key, params), &res)
	if res.Handle == "" {
		t.Fatalf("host.acquire: no handle")
	}
	return res
}

// run runs script on handle.
func (p *plugin) run(t testing.TB, handle, script string) protocol.ExecResult {
	t.Helper()
	var r protocol.ExecResult
	p.must(t, "link.exec", execParams(handle, script, 60_000), &r)
	return r
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

func exitCode(r protocol.ExecResult) string {
	if r.ExitCode == nil {
		return "null"
	}
	return fmt.Sprint(*r.ExitCode)
}

// startRaw starts cfg through drive and stops it at the end.
func startRaw(t testing.TB, cfg caller.Config) *drive.Plugin {
	t.Helper()
	dp := drive.Start(t, cfg)
	dp.Budget = 3 * time.Minute
	return dp
}

// keyHash is the plugin's name suffix for key: the first 16 bytes of its
// sha256, in hex.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}
