package docker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mu-org/mu-plugins/internal/testutil/drive"
	"github.com/mu-org/mu-plugins/internal/testutil/sandboxtest"
	"github.com/mu-org/mu-plugins/protocol"
	"github.com/mu-org/mu-plugins/protocol/caller"
)

// Releases racing on one key (mu reissuing a release whose plugin was
// killed mid-removal) all answer null: the Engine's "removal already in
// progress" is waited out, never an unknown outcome.
func TestConcurrentReleasesAllResolve(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := drive.Start(t, callerConfig(t)).Plugin
	box := protocol.Target{Host: protocol.HostRef{Name: "box"}}
	for round := 0; round < 5; round++ {
		key := "race-" + sandboxtest.NewPrefix()
		if _, err := caller.Invoke(ctx, p, protocol.MethodHostAcquire, protocol.AcquireParams{Base: protocol.Base{Target: box}, Key: key, Params: map[string]string{}}); err != nil {
			t.Fatalf("acquire: %v", err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = caller.Invoke(ctx, p, protocol.MethodHostRelease, protocol.KeyParams{Base: protocol.Base{Target: box}, Key: key})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: release %d: %v", round, i, err)
			}
		}
		st, err := caller.Invoke(ctx, p, protocol.MethodHostLookup, protocol.LookupParams{Base: protocol.Base{Target: box}, Key: key})
		if err != nil || !st.None {
			t.Fatalf("round %d: lookup after release: %+v %v", round, st, err)
		}
	}
}
