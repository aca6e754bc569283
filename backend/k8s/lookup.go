package k8s

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mu-org/mu-plugins/protocol"
)

// comingWait is how long a lookup waits for a pod that is on its way up
// (a create whose acquire died: the cluster still starts it) before it
// answers pending.
const comingWait = 20 * time.Second

// Lookup serves host.lookup: found (acquire's result), pending, none, or
// unknown. With fence, a none is made final by a placeholder pod under the
// key's name that can never run (fencePod): a late acquire's create then
// fails with AlreadyExists and refuses.
func (b *Backend) Lookup(ctx context.Context, call *protocol.Call, p protocol.LookupParams) (protocol.HostLookupResult, error) {
	name := b.podName(p.Key)
	pods := b.cs.CoreV1().Pods(b.ns)
	for attempt := 0; attempt < 100; attempt++ {
		pod, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if !p.Fence {
				return protocol.HostLookupResult{None: true}, nil
			}
			_, err := pods.Create(ctx, b.fencePod(name, p.Key), metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue // a create won the name: look at it
			}
			if err != nil {
				return protocol.HostLookupResult{Unknown: "placing the fence: " + err.Error()}, nil
			}
			return protocol.HostLookupResult{None: true}, nil
		}
		if err != nil {
			return protocol.HostLookupResult{Unknown: "the API server: " + err.Error()}, nil
		}
		switch {
		case pod.Labels[LabelFence] == "1":
			return protocol.HostLookupResult{None: true}, nil
		case pod.Annotations[AnnotKey] != p.Key:
			return protocol.HostLookupResult{Unknown: "pod name " + name + " is taken by a pod that is not this key's"}, nil
		case pod.Labels[LabelInstance] != b.instance:
			return protocol.HostLookupResult{Unknown: "pod " + name + " belongs to instance " + pod.Labels[LabelInstance]}, nil
		case pod.DeletionTimestamp != nil:
			// Released, or rolled back: once gone, the key has no host.
			if err := b.waitGone(ctx, pod); err != nil {
				return protocol.HostLookupResult{Unknown: "pod " + name + " is being deleted"}, nil
			}
			continue
		}
		if r, again := b.lookupPod(ctx, pod, p.Key); !again {
			return r, nil
		}
	}
	return protocol.HostLookupResult{Unknown: "pod " + name + " kept changing"}, nil
}

// lookupPod answers for the key's pod; again when it rolled the pod back
// and the name must be looked at again.
func (b *Backend) lookupPod(ctx context.Context, pod *corev1.Pod, key string) (protocol.HostLookupResult, bool) {
	res, err := parseResult(pod.Annotations[AnnotResult])
	if err != nil {
		return protocol.HostLookupResult{Unknown: err.Error()}, false
	}
	h, _ := health(pod)
	if h == podComing {
		// Its acquire may be gone; the cluster starts the pod anyway.
		wctx, cancel := context.WithTimeout(ctx, comingWait)
		pod, h = b.waitComing(wctx, pod)
		cancel()
	}
	switch h {
	case podUp:
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		r, err := b.hosts.Pool(pod.Name).Script(rctx, "true", ".", 10*time.Second)
		if err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
			return protocol.HostLookupResult{Pending: true}, false
		}
		b.hosts.Remember(pod.Name)
		return protocol.HostLookupResult{Found: res.With(pod.Name)}, false
	case podStuck:
		if !b.abandoned(pod, key) {
			return protocol.HostLookupResult{Pending: true}, false
		}
		// Its acquire would have deleted it: roll it back, then answer as
		// for nothing (a fenced lookup places its fence).
		b.log.Info("deleting a pod an acquire left that cannot start", "pod", pod.Name, "creator", pod.Annotations[AnnotCreator])
		if err := b.deletePod(ctx, pod, 0); err != nil {
			return protocol.HostLookupResult{Unknown: "deleting a pod that cannot start: " + err.Error()}, false
		}
		return protocol.HostLookupResult{}, true
	case podGone:
		return protocol.HostLookupResult{Found: res.With(pod.Name)}, false // acquired and since ended: host.status says gone
	}
	return protocol.HostLookupResult{Pending: true}, false
}

// waitComing polls a pod on its way up until it is up, stuck or gone, or
// ctx ends.
func (b *Backend) waitComing(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, podHealth) {
	for {
		select {
		case <-ctx.Done():
			return pod, podComing
		case <-time.After(200 * time.Millisecond):
		}
		got, err := b.cs.CoreV1().Pods(b.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || got.UID != pod.UID {
			return pod, podUnclear
		}
		pod = got
		if h, _ := health(pod); h != podComing {
			return pod, h
		}
	}
}

// abandoned tells a pod whose acquire is over: its creator no longer runs
// (or, when that cannot be checked, no acquire runs this long).
func (b *Backend) abandoned(pod *corev1.Pod, key string) bool {
	return b.hosts.Abandoned(pod.Annotations[AnnotCreator], key, func() bool {
		return time.Since(pod.CreationTimestamp.Time) > b.cfg.AbandonAfter
	})
}
