package k8s

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mu-org/mu-plugins/protocol"
)

// ReachTimeout bounds the first contact with the API server in a plugin's
// life (and each host check's): one that accepts and never answers is
// answered within it.
const ReachTimeout = 5 * time.Second

// Reach makes sure the API server answers before the first call that
// needs it: nothing is asked before the handshake; the first call asks for
// /version, bounded by ReachTimeout; later calls go straight through.
func (b *Backend) Reach(ctx context.Context) error {
	if b.reached.Load() {
		return nil
	}
	if _, err := b.version(ctx); err != nil {
		return err
	}
	b.reached.Store(true)
	return nil
}

// version asks the API server its version within ReachTimeout. Its error
// names the server and what chose it, and is retryable: nothing was done.
func (b *Backend) version(ctx context.Context) (string, error) {
	vctx, cancel := context.WithTimeout(ctx, ReachTimeout)
	defer cancel()
	v, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/version").Do(vctx).Raw()
	if err == nil {
		return string(v), nil
	}
	if cerr := b.credentialError(err); cerr != nil {
		return "", cerr
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
		return "", &protocol.Error{Kind: protocol.Human, Message: "the API server refused the plugin's credentials: " + err.Error(),
			Remedy: "renew the kubeconfig's credentials (" + b.cfg.Target.Source + "), or point the plugin at another context"}
	}
	what := "is unreachable"
	if errors.Is(err, context.DeadlineExceeded) {
		what = fmt.Sprintf("did not answer within %v", ReachTimeout)
	}
	b.log.Warn("the API server cannot be reached", "server", b.cfg.Target.REST.Host, "err", err)
	return "", &protocol.Error{Kind: protocol.Retryable,
		Message: fmt.Sprintf("the Kubernetes API server at %s %s: %v", b.cfg.Target.REST.Host, what, err),
		Remedy: fmt.Sprintf("start the cluster, or point the plugin at one that runs (chosen by %s, context %q; see docs/k8s.md); `kubectl version` shows what kubectl gets there",
			b.cfg.Target.Source, b.cfg.Target.Context)}
}

// Owned checks that the pod name is a host this instance acquired (not a
// fence placeholder).
func (b *Backend) Owned(ctx context.Context, name string) error {
	pod, err := b.cs.CoreV1().Pods(b.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return apiErr(err, "reading pod "+name)
	}
	if pod.Labels[LabelPlugin] != pluginLabelVal || pod.Labels[LabelInstance] != b.instance || pod.Labels[LabelFence] == "1" {
		return protocol.Errorf(protocol.Permanent, "pod %s is not a host of instance %q", name, b.instance)
	}
	return nil
}
