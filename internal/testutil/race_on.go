//go:build race

package testutil

// Race tells whether this binary runs with the race detector.
const Race = true
