package k8s_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/protocol"
)

// drillTrials is how many SIGKILL trials each drill runs:
// MU_K8S_DRILL_TRIALS, default 8 (the issue asks 50; `make test` keeps the
// default for time, docs/k8s.md says how to run 50).
func drillTrials(t *testing.T) int {
	if s := os.Getenv("MU_K8S_DRILL_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("MU_K8S_DRILL_TRIALS=%q: want a positive integer", s)
		}
		return n
	}
	return 8
}

// TestCrashDrillAcquire SIGKILLs the plugin at random points of
// host.acquire, then resolves the key as mu's replay does (lookup, fenced
// on some trials) and releases it: a found key has exactly one pod, a
// fenced none only its fence, and no host pod is left at the end.
func TestCrashDrillAcquire(t *testing.T) {
	trials := drillTrials(t)
	p := start(t)
	t0 := time.Now()
	p.acquire(t, "drill-probe", nil)
	full := time.Since(t0)
	p.must(t, "host.release", keyParams("drill-probe"), nil)
	prefix := p.prefix
	t.Logf("a whole acquire took %v; killing within 0..%v (even trials within 40ms)", full, full+full/4)

	var mu sync.Mutex
	counts := map[string]int{}
	t.Run("trials", func(t *testing.T) {
		for i := 0; i < trials; i++ {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				span := full + full/4
				if i%2 == 0 {
					span = 40 * time.Millisecond // around the create itself
				}
				answer := acquireTrial(t, prefix, i, time.Duration(rand.Int64N(int64(span))))
				mu.Lock()
				counts[answer]++
				mu.Unlock()
			})
		}
	})
	t.Logf("lookup answers after the kill: %v", counts)
	if counts["unknown"] > 0 {
		t.Errorf("lookup answered unknown %d times with the cluster up", counts["unknown"])
	}
	q := startOn(t, prefix)
	for i := 0; i < trials; i++ {
		q.must(t, "host.release", keyParams(fmt.Sprintf("drill-%d", i)), nil)
	}
	for _, pod := range prefixed(pods(t, q.c, ""), prefix) {
		if pod.Labels["org.mu-plugins/fence"] != "1" {
			t.Errorf("host pod %s left after releasing every key", pod.Name)
		}
	}
}

func acquireTrial(t *testing.T, prefix string, i int, killAfter time.Duration) string {
	key := fmt.Sprintf("drill-%d", i)
	p := startOn(t, prefix)
	p.sendAway("host.acquire", acquireParams(key, map[string]string{"ttl": "1h"}))
	time.Sleep(killAfter)
	p.kill()

	q := startOn(t, prefix)
	fence := i%4 == 0
	var lk protocol.HostLookupResult
	for {
		q.must(t, "host.lookup", lookupParams(key, fence), &lk)
		if !lk.Pending {
			break
		}
	}
	name := q.podName(t, key)
	var mine []string
	for _, pod := range prefixed(pods(t, q.c, ""), prefix) {
		if pod.Name == name && pod.DeletionTimestamp == nil {
			mine = append(mine, pod.Labels["org.mu-plugins/fence"])
		}
	}
	switch {
	case lk.Found != nil:
		if len(mine) != 1 || mine[0] == "1" {
			t.Errorf("%s found, pods %v", key, mine)
		}
		var hs protocol.HostStatus
		q.must(t, "host.status", statusParams(lk.Found.Handle), &hs)
		if hs.State != protocol.HostUp {
			t.Errorf("%s found but status %+v", key, hs)
		}
		return "found"
	case lk.None && fence:
		if len(mine) != 1 || mine[0] != "1" {
			t.Errorf("%s fenced none, pods %v", key, mine)
		}
		if err := q.call(t, "host.acquire", acquireParams(key, map[string]string{"ttl": "1h"}), nil); err == nil {
			t.Errorf("%s: an acquire after a fenced none succeeded", key)
		}
		return "none"
	case lk.None:
		if len(mine) != 0 {
			t.Errorf("%s none, pods %v", key, mine)
		}
		return "none"
	}
	t.Logf("%s: lookup %+v", key, lk)
	return "unknown"
}

// podName is the key's pod name, as the plugin derives it.
func (p *plugin) podName(t testing.TB, key string) string {
	return p.prefix + "-" + keyHash(key)
}

// TestCrashDrillRelease SIGKILLs the plugin at random points of
// host.release; the reissued release (mu's replay) answers null and no pod
// is left.
func TestCrashDrillRelease(t *testing.T) {
	trials := drillTrials(t)
	p := start(t)
	prefix := p.prefix
	for i := 0; i < trials; i++ {
		p.acquire(t, fmt.Sprintf("rel-%d", i), nil)
	}
	t.Run("trials", func(t *testing.T) {
		for i := 0; i < trials; i++ {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				key := fmt.Sprintf("rel-%d", i)
				k := startOn(t, prefix)
				k.sendAway("host.release", keyParams(key))
				time.Sleep(time.Duration(rand.Int64N(int64(3 * time.Second))))
				k.kill()
				q := startOn(t, prefix)
				q.must(t, "host.release", keyParams(key), nil)
				name := q.podName(t, key)
				for _, pod := range prefixed(pods(t, q.c, ""), prefix) {
					if pod.Name == name {
						t.Errorf("%s: pod %s left after the reissued release", key, name)
					}
				}
			})
		}
	})
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
			res := p.acquire(t, fmt.Sprintf("par-%d", i), map[string]string{"cpuRequest": "10m", "memoryRequest": "32Mi"})
			handles[i] = res.Handle
			if r := p.run(t, res.Handle, "echo "+strconv.Itoa(i)); r.Stdout != strconv.Itoa(i)+"\n" {
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
			p.must(t, "host.release", keyParams(fmt.Sprintf("par-%d", i)), nil)
		}()
	}
	wg.Wait()
	if left := prefixed(pods(t, p.c, ""), p.prefix); len(left) != 0 {
		t.Errorf("%d pods left after releasing all 20", len(left))
	}
}
