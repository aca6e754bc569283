package k8s

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mu-org/mu-plugins/protocol"
)

// releaseGrace is the grace a released pod gets: its PID 1 exits on
// SIGTERM at once.
const releaseGrace = 2

// Release serves host.release: delete the key's pod and answer once it is
// gone (the kubelet stopped its containers). A pod already gone resolves to
// null. A fence placeholder stays: the fence is forever (docs/k8s.md says
// how to remove placeholders by label).
func (b *Backend) Release(ctx context.Context, call *protocol.Call, p protocol.KeyParams) (protocol.Null, error) {
	name := b.podName(p.Key)
	pod, err := b.cs.CoreV1().Pods(b.ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return protocol.Null{}, nil
	}
	if err != nil {
		return protocol.Null{}, apiErr(err, "reading pod "+name)
	}
	if pod.Labels[LabelFence] == "1" {
		return protocol.Null{}, nil
	}
	if pod.Annotations[AnnotKey] != p.Key {
		return protocol.Null{}, protocol.HumanError("delete or rename the pod, or use another --prefix",
			"pod name %s is taken by a pod that is not this key's", name)
	}
	b.dropPool(name)
	if pod.DeletionTimestamp == nil {
		if err := b.deletePod(ctx, pod, releaseGrace); err != nil {
			if notSent(err) {
				return protocol.Null{}, protocol.Wrap(protocol.Retryable, err, "the API server is unreachable")
			}
			return protocol.Null{}, protocol.Wrap(protocol.UnknownOutcome, err, "deleting pod "+name)
		}
	}
	if err := b.waitGone(ctx, pod); err != nil {
		return protocol.Null{}, protocol.Wrap(protocol.UnknownOutcome, err, "pod "+name+" is being deleted")
	}
	return protocol.Null{}, nil
}
