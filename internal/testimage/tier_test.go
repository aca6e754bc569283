package testimage

import (
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil"
)

// Every test here needs the docker tier (testutil.Tiers).
func TestMain(m *testing.M) { testutil.TierMain(m, "docker", nil) }
