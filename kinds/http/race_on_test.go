//go:build race

package http_test

// raceEnabled: the race detector's sync.Pool drops what it is given at
// random, so allocation counts are not the build's.
const raceEnabled = true
