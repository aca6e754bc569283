package docker_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil/dockercli"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/protocol"
)

// A host's sandbox: a process limit by default; the pids, network, user and
// capDrop params; never privileged, never the host's network.
func TestSandboxParams(t *testing.T) {
	p := start(t)
	def := p.Acquire(t, "key-sb-default", nil).Handle
	if got := dockercli.Docker(t, "inspect", "-f", "{{.HostConfig.PidsLimit}}|{{.HostConfig.Privileged}}|{{.HostConfig.NetworkMode}}|{{.Config.User}}", def); got != "4096|false|default|mu" {
		t.Errorf("default sandbox: %s, want pids 4096, not privileged, the default network, the image's user", got)
	}
	net := "mutest-net-" + runID
	dockercli.Docker(t, "network", "create", "--label", "org.mu-plugins.test=1", net)
	t.Cleanup(func() { // the network goes once no host is on it
		for _, k := range []string{"key-sb-default", "key-sb-set", "key-sb-none"} {
			_ = sandboxtest.Err(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams(k))
		}
		dockercli.Docker(t, "network", "rm", net)
	})
	h := p.Acquire(t, "key-sb-set", map[string]string{"pids": "128", "network": net, "user": "1000:1000", "capDrop": "net_raw,MKNOD"}).Handle
	if got := dockercli.Docker(t, "inspect", "-f", "{{.HostConfig.PidsLimit}}|{{.HostConfig.NetworkMode}}|{{.Config.User}}|{{.HostConfig.CapDrop}}", h); !strings.HasPrefix(got, "128|"+net+"|1000:1000|[") ||
		!strings.Contains(got, "NET_RAW") || !strings.Contains(got, "MKNOD") {
		t.Errorf("sandbox params: %s", got)
	}
	if r := p.Run(t, h, "id -u; cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max"); r.Stdout != "1000\n128\n" {
		t.Errorf("in the container: %q %q", r.Stdout, r.Stderr)
	}
	none := p.Acquire(t, "key-sb-none", map[string]string{"network": "none"}).Handle
	if r := p.Run(t, none, "ls /sys/class/net"); r.Stdout != "lo\n" {
		t.Errorf("network=none: interfaces %q", r.Stdout)
	}
	for _, bad := range []map[string]string{{"network": "host"}, {"network": "container:x"}, {"pids": "10"}, {"pids": "many"},
		{"capDrop": "ALL;rm"}, {"user": "a b"}} {
		err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams("key-sb-bad", bad))
		if err == nil || err.Kind != "permanent" || !strings.Contains(err.Message, "known params") {
			t.Errorf("acquire with %v: %v, want a permanent error naming the params", bad, err)
		}
	}
	err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams("key-sb-nonet", map[string]string{"network": "mutest-no-such-net"}))
	if err == nil || err.Kind != "permanent" || !strings.Contains(err.Message, `network "mutest-no-such-net" is not on the Engine`) {
		t.Errorf("acquire on a missing network: %v", err)
	}
	if n := len(labelled("org.mu-plugins.key=key-sb-bad")) + len(labelled("org.mu-plugins.key=key-sb-nonet")); n != 0 {
		t.Errorf("%d containers made by refused acquires", n)
	}
}

// There is no default image: an acquire without one is a hand-back naming
// --image and the docs, and makes nothing; the image param still works,
// host check warns, and a fence still holds.
func TestNoDefaultImage(t *testing.T) {
	p := start(t, "--image", "") // the last --image wins: none
	err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams("key-noimg", nil))
	if err == nil || err.Kind != "human" || !strings.Contains(err.Remedy, "--image") || !strings.Contains(err.Remedy, "docs/docker.md") {
		t.Errorf("acquire with no image: %v, want a hand-back naming --image and the docs", err)
	}
	if n := len(labelled("org.mu-plugins.key=key-noimg")); n != 0 {
		t.Errorf("%d containers made with no image", n)
	}
	if img := reachSteps(t, p, "")["image"]; img.OK != protocol.StepWarn || !strings.Contains(img.Detail, "--image") {
		t.Errorf("image step with no --image: %+v", img)
	}
	h := p.Acquire(t, "key-noimg", map[string]string{"image": testimage.Name}).Handle
	if r := p.Run(t, h, "id -un"); r.Stdout != "mu\n" {
		t.Errorf("exec: %+v", r)
	}
	lk := p.Lookup(t, "key-noimg-fenced", true)
	if !lk.None || len(labelled("org.mu-plugins.key=key-noimg-fenced")) != 1 {
		t.Errorf("fenced lookup with no --image: %+v", lk)
	}
	if err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams("key-noimg-fenced", map[string]string{"image": testimage.Name})); err == nil || !strings.Contains(err.Message, "fenced") {
		t.Errorf("acquire of a fenced key: %v", err)
	}
}

// A host gets the k8s provider's pod limits unless its params say others
// (2 CPU, or the Engine's count when lower; 2 GiB), and an image that
// runs as root is refused unless the user param asks for root; a host
// whose agent runs as root is a warning in host check (issue 26).
func TestSandboxDefaults(t *testing.T) {
	p := start(t)
	def := p.Acquire(t, "key-sd-default", nil).Handle
	cpus := "2000000000"
	if n, _ := strconv.Atoi(dockercli.Docker(t, "info", "-f", "{{.NCPU}}")); n < 2 {
		cpus = strconv.Itoa(n) + "000000000"
	}
	if got := dockercli.Docker(t, "inspect", "-f", "{{.HostConfig.NanoCpus}}|{{.HostConfig.Memory}}", def); got != cpus+"|2147483648" {
		t.Errorf("default limits: %s, want %s|2147483648", got, cpus)
	}
	if c := reachSteps(t, p, def)["container"]; c.OK != protocol.StepPassed {
		t.Errorf("container step of a non-root host: %+v", c)
	}
	set := p.Acquire(t, "key-sd-set", map[string]string{"cpus": "0.5", "memory": "512m"}).Handle
	if got := dockercli.Docker(t, "inspect", "-f", "{{.HostConfig.NanoCpus}}|{{.HostConfig.Memory}}", set); got != "500000000|536870912" {
		t.Errorf("limits from params: %s", got)
	}

	rootImage := "mu-plugins-test-root:" + runID
	build := exec.Command("docker", "build", "-q", "-t", rootImage, "-")
	build.Stdin = strings.NewReader("FROM " + testimage.Name + "\nUSER root\n")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", rootImage).Run() })
	err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams("key-sd-root", map[string]string{"image": rootImage}))
	if err == nil || err.Kind != "human" || !strings.Contains(err.Message, "runs as root") || !strings.Contains(err.Remedy, "--param user=root") {
		t.Errorf("acquire of a root image: %v, want a hand-back naming the user param", err)
	}
	if n := len(labelled("org.mu-plugins.key=key-sd-root")); n != 0 {
		t.Errorf("%d containers made for a refused root image", n)
	}
	root := p.Acquire(t, "key-sd-root-asked", map[string]string{"image": rootImage, "user": "root"}).Handle
	if r := p.Run(t, root, "id -u"); r.Stdout != "0\n" {
		t.Errorf("user=root: %+v", r)
	}
	if c := reachSteps(t, p, root)["container"]; c.OK != protocol.StepWarn || !strings.Contains(c.Detail, "as root") {
		t.Errorf("container step of a root host: %+v", c)
	}
	for _, k := range []string{"key-sd-default", "key-sd-set", "key-sd-root-asked"} {
		sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams(k))
	}
}
