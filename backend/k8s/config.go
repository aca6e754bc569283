package k8s

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mu-org/mu-plugins/internal/safefile"
)

// Target is the cluster and namespace the plugin addresses, resolved as
// kubectl resolves them: --kubeconfig, else KUBECONFIG (several files,
// merged), else ~/.kube/config; the current context unless --context; the
// context's namespace unless --namespace ("default" when none says); the
// in-cluster configuration when no kubeconfig is found and the plugin runs
// in a pod. Nothing is asked of the API server.
type Target struct {
	REST      *rest.Config
	Namespace string
	Context   string // the context used ("" in-cluster)
	Source    string // what chose it, for logs and the reach step
	// Helper is the kubeconfig's exec credential helper ("": none), run
	// bounded under CredentialCommand.
	Helper string
	// Files are the kubeconfig files in force, in precedence order (the
	// sub-commands, git's bridge and a job's view, get them as KUBECONFIG).
	Files []string
}

// ResolveTarget resolves kubeconfig, context and namespace (each "" for
// kubectl's default) into a Target.
func ResolveTarget(kubeconfig, context, namespace string) (Target, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	over := &clientcmd.ConfigOverrides{CurrentContext: context}
	over.Context.Namespace = namespace
	for _, f := range append([]string{rules.ExplicitPath}, rules.GetLoadingPrecedence()...) {
		if f == "" {
			continue
		}
		if err := safefile.Check(f, safefile.MaxConfig); err != nil { // client-go would block on a FIFO, or read /dev/zero without end
			return Target{}, fmt.Errorf("kubeconfig (%s): %w", describe(rules), err)
		}
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over)
	cfg, err := cc.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return Target{}, noCluster(rules)
	}
	if err != nil {
		return Target{}, fmt.Errorf("kubeconfig (%s): %w", describe(rules), err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return Target{}, fmt.Errorf("namespace: %w", err)
	}
	t := Target{REST: cfg, Namespace: ns, Source: describe(rules)}
	if self, err := os.Executable(); err == nil {
		t.Helper = wrapCredentialHelper(cfg, self)
	}
	raw, err := cc.RawConfig()
	if err == nil && len(raw.Contexts) > 0 {
		t.Context = raw.CurrentContext
		if context != "" {
			t.Context = context
		}
		t.Files = existing(rules.GetLoadingPrecedence())
		if kubeconfig != "" {
			t.Files = []string{kubeconfig}
		}
	} else {
		t.Source = "in-cluster configuration"
	}
	// The plugin's many small calls (readiness polls of 20 acquires at
	// once) would wait on client-go's default 5 requests a second.
	t.REST.QPS, t.REST.Burst = 50, 100
	return t, nil
}

// noCluster says where kubectl looks for a cluster and how to point the
// plugin at one (client-go's own words name KUBERNETES_MASTER, which
// kubectl does not read).
func noCluster(r *clientcmd.ClientConfigLoadingRules) error {
	where := "--kubeconfig, else $KUBECONFIG, else ~/.kube/config (" + clientcmd.RecommendedHomeFile + ")"
	found := "none of them holds a cluster"
	if r.ExplicitPath == "" && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		found = "no --kubeconfig, KUBECONFIG unset, and no ~/.kube/config"
	}
	return fmt.Errorf("no cluster configured: kubectl looks in %s, or uses the in-cluster configuration inside a pod; %s. "+
		"Point the plugin at a cluster: register it with --kubeconfig FILE [--context NAME], or set KUBECONFIG=FILE in mu's environment "+
		"(`kubectl config get-contexts` lists what kubectl sees; docs/k8s.md)", where, found)
}

func describe(r *clientcmd.ClientConfigLoadingRules) string {
	if r.ExplicitPath != "" {
		return "--kubeconfig " + r.ExplicitPath
	}
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "" {
		return "KUBECONFIG"
	}
	return clientcmd.RecommendedHomeFile
}

func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
			out = append(out, p)
		}
	}
	return out
}

// Instance is the stable identity of the cluster and namespace: "k8s-" and
// a hash of the cluster's CA bundle and the namespace. The API server's
// URL is not part of it (a cluster reached through another address, a
// relay or a load balancer, is the same cluster); a cluster whose CA is
// not in the configuration (system roots) falls back to its host.
func (t Target) Instance() (string, error) {
	ca := t.REST.CAData
	if len(ca) == 0 && t.REST.CAFile != "" {
		b, err := os.ReadFile(t.REST.CAFile)
		if err != nil {
			return "", fmt.Errorf("reading the cluster's CA %s: %w", t.REST.CAFile, err)
		}
		ca = b
	}
	h := sha256.New()
	if len(ca) > 0 {
		h.Write([]byte("ca\x00"))
		h.Write([]byte(strings.TrimSpace(string(ca))))
	} else {
		h.Write([]byte("host\x00" + t.REST.Host))
	}
	h.Write([]byte("\x00ns\x00" + t.Namespace))
	return "k8s-" + hex.EncodeToString(h.Sum(nil))[:20], nil
}

// Env is the environment a sub-command needs to address the same cluster
// and namespace as this plugin (pinned: a view runs in mu's pane, whose
// environment may not be the plugin's).
func (t Target) Env() map[string]string {
	env := map[string]string{envNamespace: t.Namespace}
	if len(t.Files) > 0 {
		env[clientcmd.RecommendedConfigPathEnvVar] = strings.Join(t.Files, string(filepath.ListSeparator))
	}
	if t.Context != "" {
		env[envContext] = t.Context
	}
	return env
}

// The sub-commands' own variables (Env).
const (
	envContext   = "MU_K8S_PLUGIN_CONTEXT"
	envNamespace = "MU_K8S_PLUGIN_NAMESPACE"
)

// pinnedTarget is the Target a sub-command's environment names (Env).
func pinnedTarget() (Target, error) {
	return ResolveTarget("", os.Getenv(envContext), os.Getenv(envNamespace))
}
