//go:build !race

package lua

// raceEnabled: see race_on_test.go.
const raceEnabled = false
