package tier

import (
	"strings"
	"testing"
)

// MU_TEST_TIERS names tiers, or all; a name that is no tier is an error,
// never a quiet skip.
func TestAsked(t *testing.T) {
	for _, c := range []struct {
		env, tier string
		want      bool
		err       string
	}{
		{"", "ssh", false, ""},
		{"all", "k8s", true, ""},
		{"ssh, docker", "docker", true, ""},
		{"ssh,docker", "k8s", false, ""},
		{"dokcer", "docker", false, `no tier "dokcer"`},
		{"all", "nope", false, `no tier "nope"`},
	} {
		t.Setenv(Var, c.env)
		got, err := Asked(c.tier)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s=%q, tier %s: %v %v, want %v and an error holding %q", Var, c.env, c.tier, got, err, c.want, c.err)
		}
	}
}

// A tier not asked skips with its one reason; asked, the test runs.
func TestNeedSkipsOrRuns(t *testing.T) {
	t.Setenv(Var, "docker")
	var ran bool
	t.Run("k8s", func(t *testing.T) {
		Need(t, "k8s")
		ran = true
	})
	if ran {
		t.Error("a test of a tier not asked ran")
	}
	t.Run("docker", func(t *testing.T) {
		Need(t, "docker")
		ran = true
	})
	if !ran {
		t.Error("a test of a tier asked did not run")
	}
	if want := "tier k8s not asked: it needs the project's test cluster"; !strings.HasPrefix(tierSkip("k8s"), want) || !strings.Contains(tierSkip("k8s"), Var+"=k8s") {
		t.Errorf("the skip reason %q, want it to start %q and name %s=k8s", tierSkip("k8s"), want, Var)
	}
}
