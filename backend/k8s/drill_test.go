package k8s_test

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/crashdrill"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/protocol"
)

// drillTrials is how many SIGKILL trials each drill runs:
// MU_K8S_DRILL_TRIALS, default 50 (the figure).
func drillTrials(t *testing.T) int {
	if s := os.Getenv("MU_K8S_DRILL_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("MU_K8S_DRILL_TRIALS=%q: want a positive integer", s)
		}
		return n
	}
	return 50
}

// drillConc is how many trials of a drill run at once: a trial mostly
// waits (on the API server, the kubelet, a pod's start), so ten at a time
// keep the drills' time down on two cores.
const drillConc = 10

// smallPod are the params of a drill's hosts: requests small enough that
// fifty pods fit the one node beside the other tests' (its 2 CPUs).
var smallPod = map[string]string{"ttl": "1h", "cpuRequest": "10m", "memoryRequest": "32Mi"}

// longestOf runs call(c) for c in 0..n-1 side by side, as a drill's
// trials run, and returns the longest time a call reported: a whole
// call's time under the drill's own load, the span its kills spread over.
func longestOf(t *testing.T, n int, call func(t *testing.T, c int) time.Duration) time.Duration {
	var mu sync.Mutex
	var longest time.Duration
	crashdrill.Trials(t, n, n, func(t *testing.T, c int) {
		d := call(t, c)
		mu.Lock()
		defer mu.Unlock()
		longest = max(longest, d)
	})
	return longest
}

// TestCrashDrillAcquire SIGKILLs the plugin at points spread over
// host.acquire (half the trials within 40 ms of the request, around the
// create), then resolves the key as mu's replay does (lookup, fenced on
// some trials) and releases it: a found key has exactly one pod, a fenced
// none only its fence, and no host pod is left at the end.
func TestCrashDrillAcquire(t *testing.T) {
	trials := drillTrials(t)
	p := start(t)
	full := p.TimeAcquire(t, "drill-probe", smallPod)
	span := full + full/4
	t.Logf("a whole acquire took %v; killing within 0..%v (odd trials), 0..40ms (even trials)", full, span)

	var counts crashdrill.Tally
	crashdrill.Trials(t, trials, drillConc, func(t *testing.T, i int) {
		at := crashdrill.KillPoint(i/2, (trials+1)/2, span)
		if i%2 == 0 {
			at = crashdrill.KillPoint(i/2, (trials+1)/2, 40*time.Millisecond) // around the create itself
		}
		counts.Add(acquireTrial(t, p, i, at))
	})
	t.Logf("lookup answers after the kill: %v", &counts)
	crashdrill.Trials(t, trials, drillConc, func(t *testing.T, i int) {
		sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams(fmt.Sprintf("drill-%d", i)))
	})
	for _, pod := range prefixed(pods(t, p.c, ""), p.prefix) {
		if pod.Labels["org.mu-plugins/fence"] != "1" {
			t.Errorf("host pod %s left after releasing every key", pod.Name)
		}
	}
}

// acquireTrial runs key drill-i's acquire in a plugin of q's configuration,
// SIGKILLs it after killAfter, resolves the key through q (mu's next
// invocation) and returns the lookup's answer.
func acquireTrial(t *testing.T, q *plugin, i int, killAfter time.Duration) string {
	key := fmt.Sprintf("drill-%d", i)
	startOn(t, q.prefix).KillDuring("host.acquire", sandboxtest.AcquireParams(key, smallPod), killAfter)

	fence := i%4 == 0
	var lk protocol.HostLookupResult
	for {
		lk = q.Lookup(t, key, fence)
		if !lk.Pending {
			break
		}
	}
	name := q.podName(t, key)
	var mine []string
	for _, pod := range prefixed(pods(t, q.c, ""), q.prefix) {
		if pod.Name == name && pod.DeletionTimestamp == nil {
			mine = append(mine, pod.Labels["org.mu-plugins/fence"])
		}
	}
	switch {
	case lk.Found != nil:
		if len(mine) != 1 || mine[0] == "1" {
			t.Errorf("%s found, pods %v", key, mine)
		}
		hs := sandboxtest.Must(t, q, protocol.MethodHostStatus, sandboxtest.StatusParams(lk.Found.Handle))
		if hs.State != protocol.HostUp {
			t.Errorf("%s found but status %+v", key, hs)
		}
		return "found"
	case lk.None && fence:
		if len(mine) != 1 || mine[0] != "1" {
			t.Errorf("%s fenced none, pods %v", key, mine)
		}
		if err := sandboxtest.Err(t, q, protocol.MethodHostAcquire, sandboxtest.AcquireParams(key, smallPod)); err == nil {
			t.Errorf("%s: an acquire after a fenced none succeeded", key)
		}
		return "none (fenced)"
	case lk.None:
		if len(mine) != 0 {
			t.Errorf("%s none, pods %v", key, mine)
		}
		return "none"
	}
	t.Errorf("%s: lookup %+v with the cluster up", key, lk)
	return "unknown"
}

// podName is the key's pod name, as the plugin derives it.
func (p *plugin) podName(t testing.TB, key string) string {
	return p.prefix + "-" + keyHash(key)
}

// TestCrashDrillRelease SIGKILLs the plugin at points spread over
// host.release; the reissued release (mu's replay) answers null and no pod
// is left.
func TestCrashDrillRelease(t *testing.T) {
	trials := drillTrials(t)
	p := start(t)
	crashdrill.Trials(t, trials, drillConc, func(t *testing.T, i int) {
		p.Acquire(t, fmt.Sprintf("rel-%d", i), smallPod)
	})
	p.Acquire(t, "rel-probe", smallPod)
	probe := startOn(t, p.prefix)
	t0 := time.Now()
	sandboxtest.Must(t, probe, protocol.MethodHostRelease, sandboxtest.KeyParams("rel-probe"))
	full := time.Since(t0)
	probe.Stop(t)
	span := full + full/4
	t.Logf("a fresh plugin's whole release took %v; killing within 0..%v", full, span)

	var counts crashdrill.Tally
	crashdrill.Trials(t, trials, drillConc, func(t *testing.T, i int) {
		key := fmt.Sprintf("rel-%d", i)
		name := p.podName(t, key)
		startOn(t, p.prefix).KillDuring("host.release", sandboxtest.KeyParams(key), crashdrill.KillPoint(i, trials, span))
		counts.Add(releaseState(t, p, name))
		sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams(key))
		for _, pod := range prefixed(pods(t, p.c, ""), p.prefix) {
			if pod.Name == name {
				t.Errorf("%s: pod %s left after the reissued release", key, name)
			}
		}
	})
	t.Logf("the pod after the kill: %v", &counts)
}

// releaseState is where a killed release left its pod: untouched, being
// deleted or gone.
func releaseState(t *testing.T, p *plugin, name string) string {
	for _, pod := range prefixed(pods(t, p.c, ""), p.prefix) {
		if pod.Name == name {
			if pod.DeletionTimestamp != nil {
				return "being deleted"
			}
			return "untouched"
		}
	}
	return "gone"
}

// Twenty hosts acquired at once on the one node, all released: nothing is
// left.
func TestTwentyHostsInParallel(t *testing.T) {
	p := start(t, "--max-sessions", "2")
	var wg sync.WaitGroup
	handles := make([]string, 20)
	for i := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := p.Acquire(t, fmt.Sprintf("par-%d", i), map[string]string{"cpuRequest": "10m", "memoryRequest": "32Mi"})
			handles[i] = res.Handle
			if r := p.Run(t, res.Handle, "echo "+strconv.Itoa(i)); r.Stdout != strconv.Itoa(i)+"\n" {
				t.Errorf("host %d: %q", i, r.Stdout)
			}
		}()
	}
	wg.Wait()
	if n := len(prefixed(pods(t, p.c, ""), p.prefix)); n != 20 {
		t.Errorf("%d pods for 20 acquires", n)
	}
	for i := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sandboxtest.Must(t, p, protocol.MethodHostRelease, sandboxtest.KeyParams(fmt.Sprintf("par-%d", i)))
		}()
	}
	wg.Wait()
	if left := prefixed(pods(t, p.c, ""), p.prefix); len(left) != 0 {
		t.Errorf("%d pods left after releasing all 20", len(left))
	}
}
