package supervisor

import (
	"testing"

	"github.com/proctor-run/proctor/process"
)

// The EXITs the root holds for instances it has not been told of are
// bounded: those of failed starts, whose watch never comes, cannot pile
// up, and the newest, whose watch is on its way, is always kept.
func TestEarlyExitsAreBounded(t *testing.T) {
	pid := func(i int) process.PID { return process.PID{Node: "n", ID: uint64(i + 1)} }
	for _, tc := range []struct {
		name       string
		added      int
		takenEvery int // take every n-th right after adding it; 0: none
		wantHeld   int
		oldestKept int
		newestKept int
		oldestGone int // -1: none gone
	}{
		{"below the bound", 10, 0, 10, 0, 9, -1},
		{"at the bound", maxEarlyExits, 0, maxEarlyExits, 0, maxEarlyExits - 1, -1},
		{"past the bound", 3 * maxEarlyExits, 0, maxEarlyExits, 2 * maxEarlyExits, 3*maxEarlyExits - 1, 2*maxEarlyExits - 1},
		{"taken as they come", 10 * maxEarlyExits, 1, 0, -1, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var x earlyExits
			for i := range tc.added {
				x.add(process.Event{Kind: process.EventExit, From: pid(i)})
				if tc.takenEvery > 0 && i%tc.takenEvery == 0 {
					if _, ok := x.take(pid(i)); !ok {
						t.Fatalf("EXIT %d not held right after it came", i)
					}
				}
			}
			if x.len() != tc.wantHeld {
				t.Fatalf("held %d, want %d", x.len(), tc.wantHeld)
			}
			if len(x.order) > 2*maxEarlyExits+1 {
				t.Fatalf("order keeps %d PIDs", len(x.order))
			}
			for _, i := range []int{tc.oldestKept, tc.newestKept} {
				if i < 0 {
					continue
				}
				if e, ok := x.take(pid(i)); !ok || e.From != pid(i) {
					t.Fatalf("EXIT %d not held", i)
				}
			}
			if tc.oldestGone >= 0 {
				if _, ok := x.take(pid(tc.oldestGone)); ok {
					t.Fatalf("EXIT %d still held past the bound", tc.oldestGone)
				}
			}
		})
	}
}
