package docker_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testimage"
	"github.com/mu-org/mu-plugins/internal/testutil/crashdrill"
	"github.com/mu-org/mu-plugins/internal/testutil/dockercli"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
	"github.com/mu-org/mu-plugins/protocol"
)

// TestCrashDrillAcquire SIGKILLs the plugin at points spread over
// host.acquire, then resolves the key as mu would (lookup, fenced on some
// trials) and acquires again: every key ends with exactly one container,
// and none leaks.
func TestCrashDrillAcquire(t *testing.T) {
	const trials = 60
	p := start(t) // measures a whole acquire, for the range of kill points
	full := p.TimeAcquire(t, "drill-probe", nil)
	prefix, span := p.prefix, full+full/4
	t.Logf("a whole acquire took %v; killing within 0..%v", full, span)

	var counts crashdrill.Tally
	var fenced atomic.Int32
	// As many at once as the cores (-parallel's default, which capped them
	// when they were parallel subtests).
	crashdrill.Trials(t, trials, runtime.GOMAXPROCS(0), func(t *testing.T, i int) {
		answer, wasFenced := drillTrial(t, prefix, i, crashdrill.KillPoint(i, trials, span))
		counts.Add(answer)
		if wasFenced {
			fenced.Add(1)
		}
	})
	t.Logf("lookup answers after the kill: %v", &counts)
	if n := counts.Count("unknown"); n > 0 {
		t.Errorf("lookup answered unknown %d times with the Engine up", n)
	}

	// Release every key: only the fence placeholders stay.
	q := startOn(t, prefix)
	defer q.Stop(t)
	for i := 0; i < trials; i++ {
		sandboxtest.Must(t, q, protocol.MethodHostRelease, sandboxtest.KeyParams(fmt.Sprintf("drill-%d", i)))
	}
	left := labelled("org.mu-plugins.plugin=docker")
	var hosts int
	for _, id := range left {
		if dockercli.Docker(t, "inspect", "-f", `{{index .Config.Labels "org.mu-plugins.fence"}}`, id) != "1" {
			hosts++
		}
	}
	if hosts != 0 {
		t.Errorf("%d host containers leaked after releasing every key", hosts)
	}
	if len(left)-hosts != int(fenced.Load()) {
		t.Errorf("%d fence placeholders left, want %d (one per fenced none)", len(left)-hosts, fenced.Load())
	}
}

// drillTrial runs one trial and returns the lookup's answer and whether a
// fenced none made the key unacquirable.
func drillTrial(t *testing.T, prefix string, i int, killAfter time.Duration) (string, bool) {
	key := fmt.Sprintf("drill-%d", i)
	startOn(t, prefix).KillDuring("host.acquire", sandboxtest.AcquireParams(key, map[string]string{"ttl": "1h"}), killAfter)

	q := startOn(t, prefix)
	defer q.Stop(t)
	fence := i%4 == 0
	lk := q.Lookup(t, key, fence)
	answer := "none"
	switch {
	case lk.Found != nil:
		answer = "found"
	case lk.Pending:
		answer = "pending"
	case lk.Unknown != "":
		answer = "unknown"
		t.Logf("%s: lookup unknown: %s", key, lk.Unknown)
	}
	// Right after the kill the lookup resolves: the killed acquire's
	// creator is gone, so a never-started container is rolled back at
	// once, never pending (pending is only a started container whose exec
	// does not answer yet); a fenced none leaves the fence alone.
	ids := labelled("org.mu-plugins.key=" + key)
	for _, id := range ids {
		st, ok := inspect(t, id, `{{.State.Status}} {{index .Config.Labels "org.mu-plugins.fence"}}`)
		if !ok {
			continue // gone since the listing: not left
		}
		if lk.Pending && strings.HasPrefix(st, "created ") {
			t.Errorf("%s: lookup pending for a container its killed acquire never started", key)
		}
		if fence && lk.None && st != "created 1" {
			t.Errorf("%s: a fenced none left %q beside the fence", key, st)
		}
	}
	if fence && lk.None && len(ids) != 1 {
		t.Errorf("%s: a fenced none left %d containers, want the fence alone", key, len(ids))
	}
	var res protocol.AcquireResult
	res, err := sandboxtest.Ask(t, q, protocol.MethodHostAcquire, sandboxtest.AcquireParams(key, map[string]string{"ttl": "1h"}))
	wasFenced := false
	switch {
	case fence && lk.None:
		if err == nil || err.Kind != "permanent" {
			t.Errorf("%s: acquire after a fenced none: %v, want refused", key, err)
		}
		wasFenced = true
	case err != nil:
		t.Errorf("%s: acquire after the kill (lookup %s): %v", key, answer, err)
	case lk.Found != nil && *lk.Found != res && !sameResult(*lk.Found, res):
		t.Errorf("%s: acquire %+v differs from the lookup's found %+v", key, res, *lk.Found)
	}
	if n := len(labelled("org.mu-plugins.key=" + key)); n != 1 {
		t.Errorf("%s: %d containers, want exactly 1", key, n)
	}
	return answer, wasFenced
}

func sameResult(a, b protocol.AcquireResult) bool {
	return a.Handle == b.Handle && *a.DeadlineAt == *b.DeadlineAt
}

// TestKillBetweenCreateAndStart kills the plugin at the moment the issue's
// drill could only hit by chance: the Engine created the key's container,
// and the create's reply is held back on its way to the plugin (a relaying
// socket drops it), so the plugin is SIGKILLed before it could start the
// container, every time. A fresh plugin of the same instance resolves the
// key at once: its first lookup answers none (not pending until
// inFlightMs), a fenced one leaves the fence alone, and nothing the killed
// Acquire created is left.
func TestKillBetweenCreateAndStart(t *testing.T) {
	testimage.Ensure(t)
	proxy, host := startHoldingProxy(t, "/containers/create")
	direct := os.Getenv("DOCKER_HOST")
	prefix, instance := sandboxtest.NewPrefix(), "kill-create-"+runID
	for _, fence := range []bool{false, true} {
		key := fmt.Sprintf("key-killed-created-%v", fence)
		t.Setenv("DOCKER_HOST", host)
		p := startOn(t, prefix, "--instance", instance)
		t.Setenv("DOCKER_HOST", direct)
		p.SendAway("host.acquire", sandboxtest.AcquireParams(key, map[string]string{"ttl": "1h"}))
		if !waitfor.Poll(time.Minute, func() bool {
			ids := labelled("org.mu-plugins.key=" + key)
			if len(ids) != 1 {
				return false
			}
			st, ok := inspect(t, ids[0], "{{.State.Status}}")
			return ok && st == "created"
		}) {
			t.Fatalf("the Engine never created the container (%d held requests)", proxy.held.Load())
		}
		p.Kill()

		q := startOn(t, prefix, "--instance", instance)
		for _, id := range rolledBack(t, q, key, fence, "the first lookup after the kill") {
			if l := dockercli.Docker(t, "inspect", "-f", `{{index .Config.Labels "org.mu-plugins.fence"}}`, id); l != "1" {
				t.Errorf("fence %v: the killed acquire's container %s is still there", fence, id)
			}
		}
		q.Stop(t)
	}
}

// rolledBack checks that a lookup of key (fenced or not) whose create was
// abandoned (its creator gone) answers none at once (what names the
// lookup), and that no container of the key is left but, when fenced,
// one (the fence); it returns what is left.
func rolledBack(t *testing.T, p *plugin, key string, fence bool, what string) []string {
	t.Helper()
	lk := p.Lookup(t, key, fence)
	if !lk.None {
		t.Errorf("fence %v: %s: %+v, want none at once", fence, what, lk)
	}
	ids := labelled("org.mu-plugins.key=" + key)
	if want := map[bool]int{false: 0, true: 1}[fence]; len(ids) != want {
		t.Errorf("fence %v: %d containers left after the lookup, want %d", fence, len(ids), want)
	}
	return ids
}

// inspect is `docker inspect -f format id`; ok is false when the container
// is gone by then (one the Engine listed may be a create it rolls back
// because its client, a plugin the test killed, went away). Any other
// failure fails the test.
func inspect(t testing.TB, id, format string) (string, bool) {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "-f", format, id).Output()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && strings.Contains(string(ee.Stderr), "No such object"):
		return "", false
	case err != nil:
		t.Fatalf("docker inspect %s: %v", id, err)
	}
	return strings.TrimSpace(string(out)), true
}
