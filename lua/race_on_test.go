//go:build race

package lua

// raceEnabled: the race detector slows the interpreter several times
// over; the differential test then runs fewer programs by default.
const raceEnabled = true
