package testk8s

import (
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil/tier"
)

// Every test here needs the k8s tier (tier.Tiers).
func TestMain(m *testing.M) { tier.Main(m, "k8s", nil) }
