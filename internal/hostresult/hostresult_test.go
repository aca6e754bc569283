package hostresult

import (
	"testing"
	"time"
)

// TestTermsSet: ttl, idle and maxJobs are read; a duration under the
// provider's least, or a maxJobs under 1, is bad; another param is not a
// term.
func TestTermsSet(t *testing.T) {
	var tm Terms
	for _, c := range []struct {
		k, v    string
		ok, bad bool
	}{
		{"ttl", "2h", true, false}, {"idle", "90m", true, false}, {"maxJobs", "3", true, false},
		{"ttl", "500ms", true, true}, {"idle", "-1m", true, true}, {"ttl", "soon", true, true},
		{"maxJobs", "0", true, true}, {"image", "x", false, false},
	} {
		ok, why := tm.Set(c.k, c.v, time.Second)
		if ok != c.ok || (why != "") != c.bad {
			t.Errorf("%s=%s: ok %v why %q", c.k, c.v, ok, why)
		}
	}
	if tm.TTL != 2*time.Hour || tm.Idle != 90*time.Minute || tm.MaxJobs != 3 {
		t.Errorf("terms: %+v", tm)
	}
	r := tm.Result(time.UnixMilli(1000))
	if *r.DeadlineAt != 1000+2*3600*1000 || *r.IdleReclaimMs != 90*60*1000 || *r.MaxJobs != 3 {
		t.Errorf("result: %s", r)
	}
	if _, err := ParseAt("label x", "{"); err == nil || err.Error()[:8] != "label x:" {
		t.Errorf("ParseAt's error: %v", err)
	}
}
