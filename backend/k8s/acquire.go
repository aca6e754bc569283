package k8s

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mu-org/mu-plugins/internal/hostresult"
	"github.com/mu-org/mu-plugins/protocol"
)

// Acquire serves host.acquire: create (or find) the key's pod and answer
// once it is ready and an exec in it answers. Repeating it converges on the
// same pod and the same result. A pod that cannot become ready (an image
// that cannot be pulled, no node with room) is deleted, and the answer is
// a hand-back: nothing is held.
func (b *Backend) Acquire(ctx context.Context, call *protocol.Call, p protocol.AcquireParams) (protocol.AcquireResult, error) {
	spec, err := parseParams(p.Params, b.cfg)
	if err != nil {
		return protocol.AcquireResult{}, err
	}
	name := b.podName(p.Key)
	res := spec.Result(time.Now())
	annot := map[string]string{AnnotKey: p.Key, AnnotParams: hostresult.Digest(p.Params),
		AnnotResult: res.String(), AnnotCreator: b.hosts.Me().String()}
	b.hosts.InFlight(p.Key, 1)
	defer b.hosts.InFlight(p.Key, -1)

	pod, res, err := b.create(ctx, b.hostPod(name, p.Key, spec, annot), p.Key, res)
	if err != nil {
		return protocol.AcquireResult{}, err
	}
	if err := b.ready(ctx, pod); err != nil {
		return protocol.AcquireResult{}, err
	}
	return *res.With(name), nil
}

// create creates the key's pod, or finds the one a previous acquire of the
// key created. A pod of the key being deleted (a release in progress) is
// waited out first.
func (b *Backend) create(ctx context.Context, pod *corev1.Pod, key string, res storedResult) (*corev1.Pod, storedResult, error) {
	pods := b.cs.CoreV1().Pods(b.ns)
	for {
		created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if err == nil {
			return created, res, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, res, createErr(err, specOf(pod))
		}
		old, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // deleted meanwhile: create again
		}
		if err != nil {
			return nil, res, protocol.Wrap(protocol.UnknownOutcome, err, "reading pod "+pod.Name)
		}
		if err := b.sameKey(old, key, pod.Annotations[AnnotParams]); err != nil {
			return nil, res, err
		}
		if old.DeletionTimestamp != nil {
			if err := b.waitGone(ctx, old); err != nil {
				return nil, res, protocol.Wrap(protocol.UnknownOutcome, err, "pod "+pod.Name+" of this key is being deleted")
			}
			continue
		}
		stored, err := parseResult(old.Annotations[AnnotResult])
		if err != nil {
			return nil, res, protocol.Wrap(protocol.Permanent, err, "pod "+pod.Name)
		}
		return old, stored, nil
	}
}

// specOf is what createErr needs of the pod's spec.
func specOf(p *corev1.Pod) acquireSpec {
	return acquireSpec{ServiceAccount: p.Spec.ServiceAccountName}
}

// sameKey checks that an existing pod under the key's name is this key's,
// acquired by this instance with the same params.
func (b *Backend) sameKey(p *corev1.Pod, key, digest string) error {
	switch {
	case p.Labels[LabelFence] == "1":
		return protocol.Errorf(protocol.Permanent, "key is fenced: a fenced host.lookup answered none for it, so it can never be acquired")
	case p.Annotations[AnnotKey] != key || p.Labels[LabelPlugin] != pluginLabelVal:
		return protocol.HumanError("delete or rename the pod, or use another --prefix",
			"pod name %s is taken by a pod that is not this key's", p.Name)
	case p.Labels[LabelInstance] != b.instance:
		return protocol.Errorf(protocol.Permanent, "pod %s belongs to instance %q, not %q", p.Name, p.Labels[LabelInstance], b.instance)
	case digest != "" && p.Annotations[AnnotParams] != digest:
		return protocol.Errorf(protocol.Permanent, "key was already acquired with other params")
	}
	return nil
}

// ready waits until the pod is ready and an exec in it answers (over a
// pooled channel, which later link calls reuse). A pod that cannot become
// ready is deleted (rollback) and the error says why.
func (b *Backend) ready(ctx context.Context, pod *corev1.Pod) error {
	wait := 100 * time.Millisecond
	for {
		switch h, why := health(pod); h {
		case podUp:
			r, err := b.hosts.Pool(pod.Name).Script(ctx, "true", ".", 30*time.Second)
			if err == nil && r.ExitCode != nil && *r.ExitCode == 0 {
				b.hosts.Remember(pod.Name)
				return nil
			}
		case podStuck:
			return b.rollback(ctx, pod, &protocol.Error{Kind: protocol.Human, Message: "the pod cannot start (deleted): " + why, Remedy: why})
		case podGone:
			return b.rollback(ctx, pod, protocol.Errorf(protocol.Permanent, "%s (deleted)", why))
		}
		select {
		case <-ctx.Done():
			return protocol.Wrap(protocol.UnknownOutcome, ctx.Err(), "pod "+pod.Name+" created but not ready")
		case <-time.After(wait):
		}
		wait = min(wait*3/2, time.Second)
		got, err := b.cs.CoreV1().Pods(b.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return protocol.Errorf(protocol.Permanent, "pod %s was deleted while it started", pod.Name)
		case err == nil:
			pod = got
		}
	}
}

// rollback deletes a pod that cannot serve, then returns why.
func (b *Backend) rollback(ctx context.Context, pod *corev1.Pod, why error) error {
	b.dropPool(pod.Name)
	if err := b.deletePod(context.WithoutCancel(ctx), pod, 0); err != nil {
		return protocol.Wrap(protocol.UnknownOutcome, errors.Join(why, err), "deleting pod "+pod.Name+" that cannot start")
	}
	return why
}

// deletePod deletes exactly this pod (its UID) with grace seconds.
func (b *Backend) deletePod(ctx context.Context, pod *corev1.Pod, grace int64) error {
	uid := pod.UID
	err := b.cs.CoreV1().Pods(b.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or another pod holds the name now
	}
	return err
}

// waitGone polls until the pod (its UID) no longer exists, or ctx ends.
func (b *Backend) waitGone(ctx context.Context, pod *corev1.Pod) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		got, err := b.cs.CoreV1().Pods(b.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && got.UID != pod.UID) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
