//go:build race

package docker_test

// The plugin binary the tests drive is built with -race too.
const raceEnabled = true
