package testk8s

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// One cluster serves every test binary of a `go test ./...` run, and go test
// runs packages in parallel. A test that stops part of the cluster would
// break the others' calls, so a test binary holds the cluster while it runs:
// its first Ensure takes a shared lock (a file lock in the cluster's state
// directory, across processes) until the binary exits, and Stop, Kill and
// Restart make it exclusive: they wait until no other binary holds the
// cluster and keep the others out until the disrupting test ends and its
// cleanup has started the component again. Inside one binary the lock does
// not order tests: a test that disrupts must not run in parallel with others
// of its package that use the cluster.

var (
	lockMu    sync.Mutex
	lockF     *os.File
	disrupted int // tests of this binary holding the lock exclusively
)

// hold takes the binary's lock on the cluster: shared at first, exclusive
// while a disrupting test runs (released back to shared when it ends).
func (c *Cluster) hold(tb testing.TB, exclusive bool) {
	tb.Helper()
	lockMu.Lock()
	defer lockMu.Unlock()
	if err := c.holdShared(); err != nil {
		tb.Fatalf("testk8s: %v", err)
	}
	if !exclusive {
		return
	}
	if disrupted == 0 {
		if err := flock(lockF, syscall.LOCK_EX); err != nil {
			tb.Fatalf("testk8s: the cluster's test lock: %v", err)
		}
	}
	disrupted++
	tb.Cleanup(func() {
		lockMu.Lock()
		defer lockMu.Unlock()
		if disrupted--; disrupted == 0 {
			_ = flock(lockF, syscall.LOCK_SH)
		}
	})
}

// holdShared takes the binary's shared lock on the cluster, once (lockMu
// held): it waits while another binary disrupts the cluster.
func (c *Cluster) holdShared() error {
	if lockF != nil {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(c.StateDir, "tests.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("the cluster's test lock: %w", err)
	}
	if err := flock(f, syscall.LOCK_SH); err != nil {
		f.Close()
		return fmt.Errorf("the cluster's test lock: %w", err)
	}
	lockF = f // held until the binary exits
	return nil
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// Stop stops one component of the cluster (SIGTERM, SIGKILL after 10 s) and
// returns once it has exited: etcd, containerd, kube-apiserver,
// kube-controller-manager, kube-scheduler or kubelet. The test then has the
// cluster to itself until it ends; its cleanup starts the component again
// (Start). The pods keep running while the kubelet or containerd is down.
func (c *Cluster) Stop(tb testing.TB, component string) { c.disrupt(tb, "stop", component) }

// Kill is Stop with SIGKILL at once (a crash).
func (c *Cluster) Kill(tb testing.TB, component string) { c.disrupt(tb, "kill", component) }

// Restart stops the component and starts it again, waiting until it answers.
func (c *Cluster) Restart(tb testing.TB, component string) { c.disrupt(tb, "restart", component) }

// Start starts a stopped component again with its original command line and
// waits until it answers its health check; a running one is only checked.
func (c *Cluster) Start(tb testing.TB, component string) {
	tb.Helper()
	if err := c.component("start", component); err != nil {
		tb.Fatalf("testk8s: %v", err)
	}
}

// DeleteNode makes the node gone, as a cloud's node controller does for a
// machine that is gone: it stops the kubelet (Stop) and deletes the Node
// object. The pods' objects stay, bound to the missing node and reading
// Running, until the pod garbage collector deletes them (40 s later). The
// test has the cluster to itself until it ends; its cleanup starts the
// kubelet again, which registers the node anew, and waits until the node
// is Ready before the others use the cluster.
func (c *Cluster) DeleteNode(tb testing.TB) {
	tb.Helper()
	c.Stop(tb, "kubelet")
	tb.Cleanup(func() { // before Stop's: the others wait until the node is back
		if err := c.component("start", "kubelet"); err != nil {
			tb.Errorf("testk8s: starting the kubelet again after the test: %v", err)
			return
		}
		var err error
		for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(time.Second) {
			if err = c.check(); err == nil {
				return
			}
		}
		tb.Errorf("testk8s: the node after the kubelet registered it again: %v", err)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Client(tb).CoreV1().Nodes().Delete(ctx, c.Node, metav1.DeleteOptions{}); err != nil {
		tb.Fatalf("testk8s: deleting node %s: %v", c.Node, err)
	}
}

func (c *Cluster) disrupt(tb testing.TB, action, component string) {
	tb.Helper()
	c.hold(tb, true)
	tb.Cleanup(func() {
		if err := c.component("start", component); err != nil {
			tb.Errorf("testk8s: starting %s again after the test: %v", component, err)
		}
	})
	if err := c.component(action, component); err != nil {
		tb.Fatalf("testk8s: %v", err)
	}
}

// component runs integration/k8s/component.sh NAME ACTION COMPONENT.
func (c *Cluster) component(action, component string) error {
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "integration", "k8s", "component.sh")
	out, err := exec.Command(script, c.Name, action, component).CombinedOutput()
	if err != nil {
		return &componentError{action: action, component: component, err: err, out: string(out)}
	}
	return nil
}

type componentError struct {
	action, component string
	err               error
	out               string
}

func (e *componentError) Error() string {
	return "component.sh " + e.action + " " + e.component + ": " + e.err.Error() + ": " + e.out
}
