package sandbox

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// LabelFlag registers --label k=v (repeatable) on fs: an extra label on
// every host created (what names a host: "container", "pod"), into labels.
func LabelFlag(fs *flag.FlagSet, labels map[string]string, what string) {
	fs.Func("label", "an extra label k=v on every "+what+" (repeatable)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("want k=v")
		}
		labels[k] = v
		return nil
	})
}

// Defaults fills in the settings every provider has that were left unset:
// 8 exec channels kept per host, abandonAfter the declared inFlight, self
// this binary (git's ext:: transport runs it).
func Defaults(maxSessions *int, abandonAfter *time.Duration, inFlight time.Duration, self *string) error {
	if *maxSessions <= 0 {
		*maxSessions = 8
	}
	if *abandonAfter <= 0 {
		*abandonAfter = inFlight
	}
	if *self == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding this binary for git's ext:: transport: %w", err)
		}
		*self = exe
	}
	return nil
}

// CheckInstanceName refuses an instance name outside 1-128 characters.
func CheckInstanceName(instance string) error {
	if n := len(instance); n < 1 || n > 128 {
		return fmt.Errorf("instance %q must be 1-128 characters", instance)
	}
	return nil
}
