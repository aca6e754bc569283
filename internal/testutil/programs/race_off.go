//go:build !race

package programs

// Race tells whether this binary runs with the race detector.
const Race = false
