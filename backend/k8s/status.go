package k8s

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mu-org/mu-plugins/protocol"
)

// Status serves host.status: up with its facts; gone only as proof (the
// pod does not exist, it ended, it was evicted, or its node no longer
// exists); needs-human when it cannot run without a person (an image that
// cannot be pulled, no node with room, a container that cannot start);
// unknown when the cluster does not say.
func (b *Backend) Status(ctx context.Context, call *protocol.Call, p protocol.Base) (protocol.HostStatus, error) {
	st, pod, why, err := b.podState(ctx, p.Target)
	if err != nil {
		return protocol.HostStatus{}, err
	}
	switch st {
	case podUp:
		res, err := parseResult(pod.Annotations[AnnotResult])
		if err != nil {
			return protocol.HostStatus{State: protocol.HostUnknown, Reason: err.Error()}, nil
		}
		return protocol.HostStatus{State: protocol.HostUp, Handle: pod.Name, Facts: res.Facts()}, nil
	case podGone:
		return protocol.HostStatus{State: protocol.HostGone, Reason: why}, nil
	case podStuck:
		return protocol.HostStatus{State: protocol.HostNeedsHuman, Remedy: why}, nil
	}
	return protocol.HostStatus{State: protocol.HostUnknown, Reason: why}, nil
}

// podState reads the call's pod as a host: its health and why. A pod that
// is not a host of this instance is an error; a cluster that does not
// answer is podUnclear.
func (b *Backend) podState(ctx context.Context, t protocol.Target) (podHealth, *corev1.Pod, string, error) {
	name, err := handle(t)
	if err != nil {
		return podUnclear, nil, "", err
	}
	// Read within ReachTimeout, well inside a read's 10 s: an API server
	// that is down or restarting (client-go retries a GET cut by EOF for
	// seconds) makes the pod's state unclear, answered in time (unknown),
	// never a call past its deadline.
	ctx, cancel := context.WithTimeout(ctx, ReachTimeout)
	defer cancel()
	pod, err := b.cs.CoreV1().Pods(b.ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		b.dropPool(name)
		return podGone, nil, "pod " + name + " no longer exists", nil
	}
	if err != nil {
		return podUnclear, nil, "the API server: " + err.Error(), nil
	}
	if pod.Labels[LabelPlugin] != pluginLabelVal || pod.Labels[LabelInstance] != b.instance || pod.Labels[LabelFence] == "1" {
		return podUnclear, nil, "", protocol.Errorf(protocol.Permanent, "pod %s is not a host of instance %q", name, b.instance)
	}
	h, why := health(pod)
	if h != podGone && pod.Spec.NodeName != "" {
		// A node that is gone takes its pods with it, though the pod's
		// status still reads running (or terminating: no kubelet will say
		// it stopped) until the pod garbage collector deletes it. A
		// plugin not allowed to read nodes learns it from that delete.
		_, err := b.cs.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			h, why = podGone, "pod "+name+"'s node "+pod.Spec.NodeName+" no longer exists"
		}
	}
	if h == podGone {
		b.dropPool(name)
	}
	return h, pod, why, nil
}

// handle is the call's pod name: target.host.handle.
func handle(t protocol.Target) (string, error) {
	if t.Host.Handle == "" {
		return "", protocol.Errorf(protocol.Permanent, "target.host.handle is required (a pod name from host.acquire)")
	}
	return t.Host.Handle, nil
}
