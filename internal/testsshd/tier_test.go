package testsshd

import (
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil"
)

// Every test here needs the ssh tier (testutil.Tiers).
func TestMain(m *testing.M) { testutil.TierMain(m, "ssh", nil) }
