package testk8s

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A cluster of its own, crashed (its containerd SIGKILLed under a running
// pod, so the shim and the pod's processes are orphaned), is torn down by
// down.sh without a trace: checked here independently of down.sh's own
// final check.
func TestDownLeavesNothingAfterACrash(t *testing.T) {
	name := fmt.Sprintf("ut-%d", os.Getpid())
	root := DefaultStateRoot
	if r := os.Getenv("MU_K8S_STATE_ROOT"); r != "" {
		root = r
	}
	state := filepath.Join(root, name)
	t.Cleanup(func() {
		_ = script("down.sh", name).Run()
		os.RemoveAll(state + ".logs")
	})
	if out, err := script("up.sh", name).CombinedOutput(); err != nil {
		t.Fatalf("up.sh %s: %v\n%s", name, err, out)
	}
	c, err := Load(name, root)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	startPod(ctx, t, c.Client(t), c)

	podPids := cgroupProcs(t, "mu-k8s-"+name)
	if len(podPids) < 2 { // pause and the container's PID 1 at least
		t.Fatalf("the pod's processes: %v, want pause and the container's", podPids)
	}
	sandboxes, _ := os.ReadDir(filepath.Join(state, "containerd/root/io.containerd.grpc.v1.cri/sandboxes"))
	containerd, err := os.ReadFile(filepath.Join(state, "pids", "containerd"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(containerd)))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill containerd: %v", err)
	}

	if out, err := script("down.sh", name).CombinedOutput(); err != nil {
		t.Fatalf("down.sh %s after a crash: %v\n%s", name, err, out)
	}
	for _, p := range podPids {
		if alive(p) {
			t.Errorf("the pod's process %d survived down.sh", p)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		if b, _ := os.ReadFile(f); bytes.Contains(b, []byte(state+"/")) {
			t.Errorf("a process of the cluster survived down.sh: %s %q", f, b)
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if bytes.Contains(mounts, []byte(state+"/")) || bytes.Contains(mounts, []byte("/run/netns/mu-k8s-"+name+" ")) {
		t.Errorf("mounts left:\n%s", grepLines(mounts, "mu-k8s"))
	}
	left := []string{state, "/run/netns/mu-k8s-" + name}
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/mu-k8s-" + name)
	left = append(left, cgroups...)
	if len(sandboxes) == 0 {
		t.Error("no pod sandbox recorded before the crash")
	}
	for _, sb := range sandboxes {
		sum := sha256.Sum256([]byte(filepath.Join(state, "run", "containerd.sock", "k8s.io", sb.Name())))
		left = append(left, "/run/containerd/s/"+hex.EncodeToString(sum[:]),
			"/var/lib/cni/results/cni-loopback-"+sb.Name()+"-lo", "/var/lib/cni/results/mu-k8s-"+name+"-"+sb.Name()+"-eth0")
	}
	for _, p := range left {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("left behind: %s", p)
		}
	}
}

// script runs integration/k8s/NAME with args, owned by this test's process
// (so that `down.sh --stale` reaps it if the test dies).
func script(name string, args ...string) *exec.Cmd {
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command(filepath.Join(filepath.Dir(file), "..", "..", "integration", "k8s", name), args...)
	cmd.Env = append(os.Environ(), "MU_K8S_OWNER="+strconv.Itoa(os.Getpid()))
	return cmd
}

// cgroupProcs lists the processes in the instance's pods' cgroups.
func cgroupProcs(t *testing.T, id string) []int {
	t.Helper()
	var pids []int
	err := filepath.WalkDir("/sys/fs/cgroup/pids/"+id, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "cgroup.procs" {
			return err
		}
		b, err := os.ReadFile(path)
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil {
				pids = append(pids, p)
			}
		}
		return err
	})
	if err != nil {
		t.Fatalf("the pods' cgroups: %v", err)
	}
	return pids
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func grepLines(b []byte, sub string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
