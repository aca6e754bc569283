package docker_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	dockerb "github.com/mu-org/mu-plugins/backend/docker"
	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil/dockercli"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/protocol"
)

func TestDeclarationLoads(t *testing.T) {
	p := start(t)
	sandboxtest.Declaration(t, p.decl, "docker", "docker")
	ep, err := dockerb.ResolveEndpoint("", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if p.decl.Instance != ep.Instance() || !strings.HasPrefix(p.decl.Instance, "docker-") {
		t.Errorf("default instance %q, want %q (derived from the endpoint %s)", p.decl.Instance, ep.Instance(), ep.Host)
	}
	q := start(t, "--instance", "eu-1")
	if q.decl.Instance != "eu-1" {
		t.Errorf("--instance: got %q", q.decl.Instance)
	}
}

func TestAcquireLookupStatusRelease(t *testing.T) {
	p := start(t)
	res, params := sandboxtest.AcquireWithTerms(t, p.Plugin, "key-1", map[string]string{"cpus": "0.5", "memory": "256m"})

	// The container: labelled, init, not privileged, no mounts, no ports, limits.
	f := dockercli.Docker(t, "inspect", "-f", `{{index .Config.Labels "org.mu-plugins.key"}}|{{index .Config.Labels "org.mu-plugins.instance"}}|{{index .Config.Labels "org.mu-plugins.plugin"}}|{{.HostConfig.Init}}|{{.HostConfig.Privileged}}|{{len .Mounts}}|{{json .HostConfig.PortBindings}}|{{.HostConfig.PublishAllPorts}}|{{.HostConfig.Memory}}|{{.HostConfig.NanoCpus}}|{{.State.Running}}`, res.Handle)
	want := "key-1|" + p.decl.Instance + "|docker|true|false|0|null|false|268435456|500000000|true"
	if f != want {
		t.Errorf("container:\n got %s\nwant %s", f, want)
	}
	if pid1 := dockercli.Docker(t, "exec", res.Handle, "cat", "/proc/1/comm"); pid1 != "docker-init" && pid1 != "tini" {
		t.Errorf("PID 1 is %q, not the Engine's init", pid1)
	}

	// lookup returned the same result; a repeated acquire converges on it.
	again := acquireWithPrefix(t, p, "key-1", params)
	if !reflect.DeepEqual(again, res) {
		t.Errorf("second acquire: %+v, want %+v", again, res)
	}
	if n := len(labelled("org.mu-plugins.key=key-1")); n != 1 {
		t.Errorf("%d containers for key-1, want 1", n)
	}
	// Same key, other params: refused, nothing made.
	if err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams("key-1", map[string]string{"ttl": "1h"})); err == nil || err.Kind != "permanent" {
		t.Errorf("acquire with other params: %v, want a permanent error", err)
	}

	// status: up with the facts as a patch (unset ones null).
	raw := sandboxtest.Send(t, p, protocol.MethodHostStatus, protocol.Base{Target: sandboxtest.HostTarget(res.Handle)})
	var st map[string]json.RawMessage
	if err := json.Unmarshal(raw.Result, &st); err != nil {
		t.Fatalf("status: %s %v", raw.Raw, raw.Error)
	}
	if string(st["state"]) != `"up"` || string(st["maxJobs"]) != "3" || string(st["deadlineAt"]) != jsonNum(*res.DeadlineAt) {
		t.Errorf("status: %s", raw.Result)
	}

	// release; again; then gone and none.
	if err := sandboxtest.Err(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("key-1")); err != nil {
		t.Fatalf("release: %v", err)
	}
	rep := sandboxtest.Send(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("key-1"))
	if rep.Error != nil || string(rep.Result) != "null" {
		t.Errorf("second release: %s", rep.Raw)
	}
	gone := sandboxtest.Must(t, p, protocol.MethodHostStatus, protocol.Base{Target: sandboxtest.HostTarget(res.Handle)})
	if gone.State != "gone" || gone.Reason == "" {
		t.Errorf("status after release: %+v", gone)
	}
	lk := p.Lookup(t, "key-1", false)
	if !lk.None {
		t.Errorf("lookup after release: %+v", lk)
	}
	if n := len(labelled("org.mu-plugins.key=key-1")); n != 0 {
		t.Errorf("%d containers left for key-1 after release", n)
	}
}

// acquireWithPrefix acquires key through a fresh plugin process using p's
// container prefix (a second invocation of the same configuration).
func acquireWithPrefix(t *testing.T, p *plugin, key string, params map[string]string) protocol.AcquireResult {
	t.Helper()
	q := startOn(t, p.prefix)
	return q.Acquire(t, key, params)
}

func jsonNum(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestUnknownParamIsPermanentAndNamesKnownOnes(t *testing.T) {
	p := start(t)
	err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams("key-bad", map[string]string{"gpus": "1"}))
	if err == nil || err.Kind != "permanent" {
		t.Fatalf("unknown param: %v, want permanent", err)
	}
	for _, k := range []string{"gpus", "ttl", "idle", "maxJobs", "cpus", "memory", "image"} {
		if !strings.Contains(err.Message, k) {
			t.Errorf("error %q does not name %q", err.Message, k)
		}
	}
	for _, bad := range []map[string]string{{"ttl": "soon"}, {"maxJobs": "0"}, {"cpus": "-1"}, {"memory": "1k"}, {"image": "no-such-image:never"}} {
		if err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams("key-bad", bad)); err == nil || err.Kind != "permanent" {
			t.Errorf("param %v: %v, want permanent", bad, err)
		}
	}
	if n := len(labelled("org.mu-plugins.key=key-bad")); n != 0 {
		t.Errorf("a refused acquire left %d containers", n)
	}
}

func TestFencedLookupMakesNoneFinal(t *testing.T) {
	p := start(t)
	sandboxtest.FencedNone(t, p.Plugin, "key-fence")
	ids := labelled("org.mu-plugins.key=key-fence")
	if len(ids) != 1 {
		t.Fatalf("%d containers for the fenced key, want the placeholder only", len(ids))
	}
	if st := dockercli.Docker(t, "inspect", "-f", "{{.State.Status}}|{{index .Config.Labels \"org.mu-plugins.fence\"}}", ids[0]); st != "created|1" {
		t.Errorf("placeholder: %s, want created (never started) with the fence label", st)
	}
	// A fenced lookup of an acquired key finds it: the fence only finalises none.
	res := p.Acquire(t, "key-fence-2", nil)
	lk := p.Lookup(t, "key-fence-2", true)
	if lk.Found == nil || lk.Found.Handle != res.Handle {
		t.Errorf("fenced lookup of an acquired key: %+v", lk)
	}
	// release leaves the fence in place.
	sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("key-fence"))
	if len(labelled("org.mu-plugins.key=key-fence")) != 1 {
		t.Errorf("release removed the fence placeholder")
	}
}

func TestStatusNeedsHumanAndGone(t *testing.T) {
	p := start(t)
	res := p.Acquire(t, "key-st", nil)
	dockercli.Docker(t, "kill", res.Handle)
	dockercli.Docker(t, "wait", res.Handle)
	// A channel open when the container died may answer unknown-outcome once.
	err := sandboxtest.Err(t, p, protocol.MethodLinkExec, sandboxtest.ExecParams(res.Handle, "true", ".", 10_000))
	if err != nil && err.Kind == "unknown-outcome" {
		err = sandboxtest.Err(t, p, protocol.MethodLinkExec, sandboxtest.ExecParams(res.Handle, "true", ".", 10_000))
	}
	if err == nil || err.Kind != "permanent" {
		t.Errorf("exec in a stopped container: %v, want permanent", err)
	}
	st := sandboxtest.Must(t, p, protocol.MethodHostStatus, protocol.Base{Target: sandboxtest.HostTarget(res.Handle)})
	if st.State != "needs-human" || !strings.Contains(st.Remedy, "exited") {
		t.Errorf("status of a killed container: %+v", st)
	}
	dockercli.Docker(t, "rm", res.Handle)
	st = sandboxtest.Must(t, p, protocol.MethodHostStatus, protocol.Base{Target: sandboxtest.HostTarget(res.Handle)})
	if st.State != "gone" {
		t.Errorf("status of a removed container: %+v", st)
	}
	// Release of a key whose container is gone resolves.
	rep := sandboxtest.Send(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams("key-st"))
	if rep.Error != nil || string(rep.Result) != "null" {
		t.Errorf("release of a removed container: %s", rep.Raw)
	}
}

// createdContainer makes the container an acquire of key leaves when it
// dies between create and start, its creator label set to creator ("" for
// none, as a container made before the label existed).
func createdContainer(t *testing.T, p *plugin, key, creator string) {
	t.Helper()
	sum := sha256.Sum256([]byte(key))
	name := p.prefix + "-" + hex.EncodeToString(sum[:16])
	digest := sha256.Sum256([]byte("{}"))
	args := []string{"create", "--name", name,
		"--label", "org.mu-plugins.test=1", "--label", "org.mu-plugins.testrun=" + runID,
		"--label", "org.mu-plugins.plugin=docker", "--label", "org.mu-plugins.instance=" + p.decl.Instance,
		"--label", "org.mu-plugins.key=" + key, "--label", "org.mu-plugins.params=" + hex.EncodeToString(digest[:16]),
		"--label", "org.mu-plugins.result={}"}
	if creator != "" {
		args = append(args, "--label", "org.mu-plugins.creator="+creator)
	}
	dockercli.Docker(t, append(args, testimage.Name, "sleep", "infinity")...)
}

// creatorOf is the creator label of process pid: boot id, pid namespace,
// pid, start time (internal/creator).
func creatorOf(t *testing.T, pid int) string {
	t.Helper()
	boot, err1 := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, err2 := os.Readlink("/proc/self/ns/pid")
	stat, err3 := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return fmt.Sprintf("%s/%s/%d/%s", strings.TrimSpace(string(boot)), strings.Trim(ns, "pid:[]"), pid, f[19])
}

// A lookup tells an abandoned create from one in flight by its creator: a
// container whose acquiring process is gone is rolled back at once (none;
// fenced: final), whatever its age; one whose creator still runs is
// pending.
func TestLookupTellsAnAbandonedCreateFromOneInFlight(t *testing.T) {
	p := start(t) // the default --abandon-after: inFlightMs, 2 minutes
	dead := exec.Command("sleep", "60")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	gone := creatorOf(t, dead.Process.Pid)
	_ = dead.Process.Kill()
	_ = dead.Wait()
	for _, fence := range []bool{false, true} {
		key := fmt.Sprintf("key-dead-creator-%v", fence)
		createdContainer(t, p, key, gone)
		rolledBack(t, p, key, fence, "lookup of a created container whose creator is gone")
		if fence {
			if err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams(key, nil)); err == nil || !strings.Contains(err.Message, "fenced") {
				t.Errorf("acquire after a fenced rollback: %v, want refused", err)
			}
		}
	}
	// A creator that still runs (this test process) may still start it.
	key := "key-live-creator"
	createdContainer(t, p, key, creatorOf(t, os.Getpid()))
	for _, fence := range []bool{false, true} {
		lk := p.Lookup(t, key, fence)
		if !lk.Pending {
			t.Errorf("fence %v: lookup of a created container whose creator runs: %+v, want pending", fence, lk)
		}
	}
	if n := len(labelled("org.mu-plugins.key=" + key)); n != 1 {
		t.Errorf("%d containers for a create in flight, want 1", n)
	}
}

// A creator the lookup cannot check (no label, another boot or machine):
// pending while an acquire could still be running, and once that time has
// passed rolled back to none (fenced or not).
func TestLookupRollsBackAnAbandonedCreate(t *testing.T) {
	p := start(t, "--abandon-after", "1s")
	for _, fence := range []bool{false, true} {
		for _, creator := range []string{"", "another-boot/4026531836/1/100"} {
			key := fmt.Sprintf("key-abandoned-%v-%d", fence, len(creator))
			createdContainer(t, p, key, creator)
			lk := p.Lookup(t, key, fence)
			if !lk.Pending {
				t.Errorf("fence %v creator %q: lookup of a fresh created container: %+v, want pending", fence, creator, lk)
			}
			time.Sleep(1500 * time.Millisecond) // age it past --abandon-after
			lk = p.Lookup(t, key, fence)
			if !lk.None {
				t.Errorf("fence %v creator %q: lookup of an abandoned created container: %+v, want none", fence, creator, lk)
			}
			ids := labelled("org.mu-plugins.key=" + key)
			if want := map[bool]int{false: 0, true: 1}[fence]; len(ids) != want {
				t.Errorf("fence %v: %d containers left, want %d", fence, len(ids), want)
			}
			err := sandboxtest.Err(t, p, protocol.MethodHostAcquire, sandboxtest.AcquireParams(key, nil))
			if fence && (err == nil || !strings.Contains(err.Message, "fenced")) {
				t.Errorf("acquire after a fenced rollback: %v, want refused", err)
			}
			if !fence && err != nil {
				t.Errorf("acquire after the rollback: %v", err)
			}
		}
	}
}
