package testsshd_test

import (
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/internal/testsshd"
)

func TestStartAndLogin(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	out := s.SSH(t, "id -un")
	if strings.TrimSpace(out) != testsshd.TestUser {
		t.Fatalf("logged in as %q, want %s", out, testsshd.TestUser)
	}
	r := testsshd.Start(t, testsshd.Options{Root: true, Alias: "rootbox"})
	if out := r.SSH(t, "id -un"); strings.TrimSpace(out) != "root" {
		t.Fatalf("logged in as %q, want root", out)
	}
}
