//go:build integration

package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/dockercli"
	"github.com/mu-org/mu-plugins/internal/testutil/waitfor"
)

// procsMatching lists the processes in a container whose command line
// contains marker (ps inside the container; zombies left out).
func procsMatching(ctx context.Context, ctr, marker string) ([]string, error) {
	out, err := dockercli.DockerCLI(ctx, "exec", ctr, "ps", "-eo", "pid=,stat=,args=")
	if err != nil {
		return nil, err
	}
	var hits []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || strings.HasPrefix(f[1], "Z") || !strings.Contains(l, marker) {
			continue
		}
		hits = append(hits, strings.TrimSpace(l))
	}
	return hits, nil
}

// waitProcs waits (bounded by ctx) until the container runs a process
// matching marker (want true) or none (want false); it returns the last
// listing.
func waitProcs(ctx context.Context, ctr, marker string, want bool) ([]string, error) {
	var hits []string
	var err error
	if waitfor.PollContext(ctx, 200*time.Millisecond, func() bool {
		hits, err = procsMatching(ctx, ctr, marker)
		return err == nil && (len(hits) > 0) == want
	}) {
		return hits, nil
	}
	if err == nil {
		err = ctx.Err()
	}
	return hits, err
}

// labelled lists the containers (all states) carrying every label given.
func labelled(t testing.TB, labels ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids, err := dockercli.DockerLabelled(ctx, labels...)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
