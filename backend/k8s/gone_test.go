package k8s_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
)

// A host whose node is gone (its kubelet stopped and the Node object
// deleted: testk8s.DeleteNode) is gone, though its pod's object still
// reads Running and Ready: host.status says gone and names the node, its
// job is lost and a fenced job.lookup none. The kubelet, started again,
// registers the node anew; the host is then released.
func TestHostGoneWithItsNode(t *testing.T) {
	p := start(t)
	res := p.Acquire(t, "key-node", smallPod)
	host := protocol.Target{Host: protocol.HostRef{Name: "box", Handle: res.Handle, Instance: p.decl.Instance}}
	jt, _ := startJob(t, p, host, "job-node")
	t.Cleanup(func() { sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("key-node")) }) // once the node is back
	p.c.DeleteNode(t)

	pod, err := p.c.Client(t).CoreV1().Pods(p.c.Namespace).Get(context.Background(), res.Handle, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the pod's object after its node was deleted: %v", err)
	}
	if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		t.Fatalf("the pod's object reads %s (deleted: %v): want it Running, so that only its node says it is gone", pod.Status.Phase, pod.DeletionTimestamp != nil)
	}
	hs := sandboxtest.Must(t, p, protocol.MethodHostStatus, sandboxtest.StatusParams(res.Handle))
	if hs.State != protocol.HostGone || !strings.Contains(hs.Reason, p.c.Node) {
		t.Errorf("host.status with its node deleted: %+v, want gone naming node %s", hs, p.c.Node)
	}
	jobLost(t, p, jt, "with its node deleted")
	// Deleted too, it stays terminating (no kubelet confirms the stop):
	// still gone.
	grace := int64(1)
	if err := p.c.Client(t).CoreV1().Pods(p.c.Namespace).Delete(context.Background(), res.Handle, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	pod, err = p.c.Client(t).CoreV1().Pods(p.c.Namespace).Get(context.Background(), res.Handle, metav1.GetOptions{})
	if err != nil || pod.DeletionTimestamp == nil {
		t.Fatalf("the deleted pod of a deleted node: %v, want it terminating", err)
	}
	hs = sandboxtest.Must(t, p, protocol.MethodHostStatus, sandboxtest.StatusParams(res.Handle))
	if hs.State != protocol.HostGone {
		t.Errorf("host.status of the terminating pod of a deleted node: %+v, want gone", hs)
	}
}

// A host evicted through the Eviction API (as kubectl drain evicts) reads
// unknown while its pod stops (never up) and gone once it has; its job is
// then lost.
func TestHostGoneEvicted(t *testing.T) {
	p := start(t)
	res := p.Acquire(t, "key-evict", smallPod)
	host := protocol.Target{Host: protocol.HostRef{Name: "box", Handle: res.Handle, Instance: p.decl.Instance}}
	jt, _ := startJob(t, p, host, "job-evict")
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: res.Handle, Namespace: p.c.Namespace}}
	if err := p.c.Client(t).PolicyV1().Evictions(p.c.Namespace).Evict(context.Background(), ev); err != nil {
		t.Fatalf("evicting pod %s: %v", res.Handle, err)
	}
	var hs protocol.HostStatus
	seen := map[protocol.HostState]int{}
	gone := waitfor.Poll(2*time.Minute, func() bool {
		hs = sandboxtest.Must(t, p, protocol.MethodHostStatus, sandboxtest.StatusParams(res.Handle))
		seen[hs.State]++
		return hs.State != protocol.HostUnknown
	})
	t.Logf("host.status answers after the eviction: %v", seen)
	if !gone || hs.State != protocol.HostGone {
		t.Fatalf("host.status after the eviction: %+v, want unknown then gone", hs)
	}
	jobLost(t, p, jt, "after the eviction")
	sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("key-evict"))
}

// jobLost checks that the job jt, on a host that is gone, is lost and a
// fenced job.lookup of its key none (nothing can ever start there).
func jobLost(t *testing.T, p *plugin, jt protocol.Target, when string) {
	t.Helper()
	if st := jobState(t, p, jt); st.State != protocol.JobLost {
		t.Errorf("job.status %s: %+v, want lost", when, st)
	}
	lk := sandboxtest.Must(t, p, protocol.MethodJobLookup, protocol.LookupParams{Base: protocol.Base{Target: jt}, Key: jt.Job.Key, Fence: true})
	if !lk.None {
		t.Errorf("job.lookup %s: %+v, want none", when, lk)
	}
}
