package testutil

import (
	"strings"
	"testing"
)

// MU_TEST_TIERS names tiers, or all; a name that is no tier is an error,
// never a quiet skip.
func TestTierAsked(t *testing.T) {
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
		t.Setenv(TiersVar, c.env)
		got, err := TierAsked(c.tier)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s=%q, tier %s: %v %v, want %v and an error holding %q", TiersVar, c.env, c.tier, got, err, c.want, c.err)
		}
	}
}

// A tier not asked skips with its one reason; asked, the test runs.
func TestTierSkipsOrRuns(t *testing.T) {
	t.Setenv(TiersVar, "docker")
	var ran bool
	t.Run("k8s", func(t *testing.T) {
		Tier(t, "k8s")
		ran = true
	})
	if ran {
		t.Error("a test of a tier not asked ran")
	}
	t.Run("docker", func(t *testing.T) {
		Tier(t, "docker")
		ran = true
	})
	if !ran {
		t.Error("a test of a tier asked did not run")
	}
	if want := "tier k8s not asked: it needs the project's test cluster"; !strings.HasPrefix(tierSkip("k8s"), want) || !strings.Contains(tierSkip("k8s"), TiersVar+"=k8s") {
		t.Errorf("the skip reason %q, want it to start %q and name %s=k8s", tierSkip("k8s"), want, TiersVar)
	}
}
