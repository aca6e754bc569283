package gitlink

import (
	"errors"
	"strings"
	"testing"

	"github.com/mu-org/mu-plugins/protocol"
)

func TestIsFullSHA(t *testing.T) {
	sha1 := strings.Repeat("0123456789", 4)
	sha256 := strings.Repeat("abcdef01", 8)
	for rev, want := range map[string]bool{
		sha1:                        true,
		sha256:                      true,
		"":                          false,
		sha1[:39]:                   false,
		sha1 + "0":                  false,
		sha256[:63]:                 false,
		strings.ToUpper(sha256):     false,
		sha1[:39] + "g":             false,
		"HEAD":                      false,
		sha1[:20] + " " + sha1[21:]: false,
	} {
		if got := IsFullSHA(rev); got != want {
			t.Errorf("IsFullSHA(%q) = %v, want %v", rev, got, want)
		}
	}
}

func TestCheckRev(t *testing.T) {
	if err := CheckRev(strings.Repeat("a", 40)); err != nil {
		t.Fatalf("a full sha: %v", err)
	}
	err := CheckRev(strings.Repeat("x", 5000))
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Kind != protocol.Permanent || !strings.Contains(pe.Message, "link.push") || len(pe.Message) > 300 {
		t.Fatalf("a long bad rev: %v", err)
	}
}

func TestRefs(t *testing.T) {
	rev := strings.Repeat("b", 40)
	if got := PushedRef(rev); got != "refs/mu/pushed/"+rev {
		t.Errorf("PushedRef = %q", got)
	}
	if got := Refspec(rev); got != rev+":refs/mu/pushed/"+rev {
		t.Errorf("Refspec = %q", got)
	}
}
