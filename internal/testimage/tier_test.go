package testimage

import (
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/tier"
)

// Every test here needs the docker tier (tier.Tiers).
func TestMain(m *testing.M) { tier.Main(m, "docker", nil) }
