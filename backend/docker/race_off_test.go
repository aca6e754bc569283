//go:build !race

package docker_test

const raceEnabled = false
