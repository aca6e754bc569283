package testk8s

import (
	"testing"

	"github.com/mu-org/mu-plugins/internal/testutil"
)

// Every test here needs the k8s tier (testutil.Tiers).
func TestMain(m *testing.M) { testutil.TierMain(m, "k8s", nil) }
