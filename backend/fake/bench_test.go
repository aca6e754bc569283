package fake

import (
	"context"
	"testing"
)

// BenchmarkRunStepsTrue is link.exec's local part alone: a /bin/sh -c true
// in a clean environment through proc.Run, the tree check, the reply fit.
func BenchmarkRunStepsTrue(b *testing.B) {
	f, err := New(Config{Root: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	dir := f.Root()
	for b.Loop() {
		r, err := f.runSteps(context.Background(), site{name: "bench", home: dir}, 10000, []step{{argv: []string{"/bin/sh", "-c", "true"}, dir: dir}})
		if err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
			b.Fatal(err)
		}
	}
}
