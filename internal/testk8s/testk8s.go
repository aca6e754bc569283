// Package testk8s gives tests the project's real single-node Kubernetes
// cluster: a real API server and a real kubelet on this machine, brought up
// by integration/k8s/up.sh (scripts/test.sh does it once before `go test`
// and tears it down after). The helper only connects: a cluster that is not
// up fails the test, never skips it, and the message says how to bring it
// up. docs/k8s.md ("The test cluster") describes the cluster.
//
// Which cluster: the instance MU_K8S_NAME (default "dev", the one
// `integration/k8s/up.sh` brings up by hand), whose files are under
// MU_K8S_STATE_ROOT (default /var/lib/mu-k8s)/NAME.
package testk8s

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mu-org/mu-plugins/internal/testutil/tier"
)

// DefaultName is the instance used when MU_K8S_NAME is unset.
const DefaultName = "dev"

// DefaultStateRoot holds one directory per instance (MU_K8S_STATE_ROOT
// overrides it).
const DefaultStateRoot = "/var/lib/mu-k8s"

// Label marks what the tests create in the cluster, as testimage.Label does
// in Docker: list leftovers with -l org.mu-plugins.test=1.
const Label = "org.mu-plugins.test"

// Cluster is a running test cluster, as up.sh described it in its env file.
type Cluster struct {
	Name       string // instance name
	Kubeconfig string // admin kubeconfig; its current context is Context, with namespace Namespace
	Context    string
	Namespace  string // mu-plugins-test: exists, with its default ServiceAccount
	Image      string // the pod image (the project's test image: sh, git, tmux; user mu); use imagePullPolicy: Never
	Node       string // the one node's name
	Server     string // https://127.0.0.1:PORT: the relay to the API server
	Netns      string // /run/netns/mu-k8s-NAME: the cluster's network namespace
	Containerd string // the cluster's own containerd socket (not Docker's)
	StateDir   string
	LogDir     string // the components' logs
	Version    string // Kubernetes version of the components
}

var (
	once    sync.Once
	cluster *Cluster
	loadErr error
)

// Ensure returns the running test cluster, checked once per test binary
// (the API server answers /readyz and the node is Ready), and holds it for
// tb (shared with the other tests: see Stop). It fails tb when the cluster
// is not up.
func Ensure(tb testing.TB) *Cluster {
	tb.Helper()
	tier.Need(tb, "k8s")
	once.Do(func() {
		// The check waits for the shared lock: a test of another binary
		// that disrupts the cluster (a node deleted, a component stopped)
		// holds it exclusively until it put the cluster back.
		cluster, loadErr = read(os.Getenv("MU_K8S_NAME"), os.Getenv("MU_K8S_STATE_ROOT"))
		if loadErr == nil {
			lockMu.Lock()
			loadErr = cluster.holdShared()
			lockMu.Unlock()
		}
		if loadErr == nil {
			loadErr = cluster.checked()
		}
	})
	if loadErr != nil {
		tb.Fatalf("testk8s: %v", loadErr)
		return nil
	}
	cluster.hold(tb, false)
	return cluster
}

// Load reads and checks the instance name (DefaultName when empty) under
// root (DefaultStateRoot when empty).
func Load(name, root string) (*Cluster, error) {
	c, err := read(name, root)
	if err != nil {
		return nil, err
	}
	if err := c.checked(); err != nil {
		return nil, err
	}
	return c, nil
}

// read reads the instance's env file (up.sh's), without asking the cluster.
func read(name, root string) (*Cluster, error) {
	if name == "" {
		name = DefaultName
	}
	if root == "" {
		root = DefaultStateRoot
	}
	envFile := filepath.Join(root, name, "env")
	env, err := readEnv(envFile)
	if err != nil {
		return nil, fmt.Errorf("the test cluster %q is not up (%v): %s", name, err, howto(name))
	}
	c := &Cluster{
		Name: name, Kubeconfig: env["MU_K8S_KUBECONFIG"], Context: env["MU_K8S_CONTEXT"],
		Namespace: env["MU_K8S_NAMESPACE"], Image: env["MU_K8S_IMAGE"], Node: env["MU_K8S_NODE"],
		Server: env["MU_K8S_SERVER"], Netns: env["MU_K8S_NETNS"], Containerd: env["MU_K8S_CONTAINERD"],
		StateDir: env["MU_K8S_STATE"], LogDir: env["MU_K8S_LOGS"], Version: env["MU_K8S_VERSION"],
	}
	if c.Kubeconfig == "" || c.Namespace == "" || c.Image == "" || c.Node == "" {
		return nil, fmt.Errorf("the test cluster %q: %s lacks MU_K8S_KUBECONFIG, MU_K8S_NAMESPACE, MU_K8S_IMAGE or MU_K8S_NODE: %s", name, envFile, howto(name))
	}
	return c, nil
}

// checked is check's error, saying how to bring the cluster up.
func (c *Cluster) checked() error {
	if err := c.check(); err != nil {
		return fmt.Errorf("the test cluster %q (%s) does not answer: %v; logs in %s: %s", c.Name, c.Server, err, c.LogDir, howto(c.Name))
	}
	return nil
}

// howto says how to bring instance name up.
func howto(name string) string {
	return fmt.Sprintf("bring it up with `integration/k8s/up.sh %s` as root (make test brings one up for its run; see docs/k8s.md)", name)
}

// check: /readyz says ok and the node is Ready.
func (c *Cluster) check() error {
	cfg, err := c.restConfig()
	if err != nil {
		return err
	}
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("/readyz: %w", err)
	}
	if string(body) != "ok" {
		return fmt.Errorf("/readyz: %q", body)
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, c.Node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("node %s: %w", c.Node, err)
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			return nil
		}
	}
	return fmt.Errorf("node %s is not Ready", c.Node)
}

// RESTConfig is the admin client configuration, from the kubeconfig.
func (c *Cluster) RESTConfig(tb testing.TB) *rest.Config {
	tb.Helper()
	cfg, err := c.restConfig()
	if err != nil {
		tb.Fatalf("testk8s: %v", err)
	}
	return cfg
}

// Client is an admin clientset.
func (c *Cluster) Client(tb testing.TB) kubernetes.Interface {
	tb.Helper()
	cs, err := kubernetes.NewForConfig(c.RESTConfig(tb))
	if err != nil {
		tb.Fatalf("testk8s: %v", err)
	}
	return cs
}

func (c *Cluster) restConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.Kubeconfig, err)
	}
	return cfg, nil
}

// readEnv parses up.sh's KEY=VALUE lines.
func readEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	return env, sc.Err()
}
