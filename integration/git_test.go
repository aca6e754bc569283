//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fetchHead reads the sha FETCH_HEAD names.
func fetchHead(t testing.TB, repo string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, ".git", "FETCH_HEAD"))
	if err != nil {
		t.Fatalf("FETCH_HEAD: %v", err)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		t.Fatalf("FETCH_HEAD is empty")
	}
	return f[0]
}
