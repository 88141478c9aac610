package pgscope

import (
	"testing"

	"github.com/proctor-run/proctor/process"
)

// A peer's join and leave of one member, the cross-node path's usual
// operation, costs the loop a fixed, small number of allocations: the
// node's set with its list and the group's version on the join, nothing on
// the leave, and one per event (its list and shared value together) only
// when someone listens. Copies for nobody, a clock read per operation and
// the scratch lists of a leave cost nothing.
func TestRemoteJoinLeaveAllocs(t *testing.T) {
	remote := process.PID{Node: "n2", ID: 7, Creation: 1}
	pids := []process.PID{remote}
	groups := []string{"g"}
	for _, tc := range []struct {
		name   string
		listen bool
		want   float64
	}{
		{"nobody listens", false, 2},
		{"a monitor of the group", true, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			if tc.listen {
				sub, _, err := h.s.Subscribe("g", SubscribeOptions{Sink: sinkFunc(func(Event) bool { return true })})
				if err != nil {
					t.Fatal(err)
				}
				defer sub.Close(false)
			}
			var got float64
			h.onLoop(func() {
				got = testing.AllocsPerRun(100, func() {
					h.s.st.remoteJoin("n2", "g", pids)
					h.s.st.remoteLeave("n2", pids, groups)
				})
			})
			if got != tc.want {
				t.Fatalf("a remote join and leave allocate %.1f, want %.0f", got, tc.want)
			}
		})
	}
}

// A local join and leave with a scope-wide subscription listening costs
// one allocation per event more than with nobody listening.
func TestLocalEventAllocs(t *testing.T) {
	h := newHarness(t, nil)
	pid := h.pid()
	groups := []string{"g"}
	cycle := func() float64 {
		var n float64
		h.onLoop(func() {
			n = testing.AllocsPerRun(100, func() {
				if err := h.s.st.join(pid, groups); err != nil {
					t.Error(err)
				}
				if err := h.s.st.leave(pid, groups); err != nil {
					t.Error(err)
				}
			})
		})
		return n
	}
	quiet := cycle()
	sub, _, err := h.s.SubscribeAll(SubscribeOptions{Sink: sinkFunc(func(Event) bool { return true })})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close(false)
	if heard := cycle(); heard != quiet+2 {
		t.Fatalf("a join and leave allocate %.1f with a listener, %.1f without; want 2 more", heard, quiet)
	}
}

// A group new to the scope with one member, as a peer's start brings
// thousands, has its cell and first version in one allocation, and the
// version reads as any other.
func TestNewCellAllocs(t *testing.T) {
	remote := remoteSet{{"n2", []process.PID{{Node: "n2", ID: 7, Creation: 1}}}}
	if n := testing.AllocsPerRun(100, func() { newCell("g", memberSet{}, remote, 1) }); n != 1 {
		t.Fatalf("a new cell of one member allocates %.0f, want 1", n)
	}
	c := newCell("g", memberSet{}, remote, 1)
	if got := c.view().members(); len(got) != 1 || got[0] != remote[0].pids[0] || c.name != "g" {
		t.Fatalf("cell %q holds %v", c.name, got)
	}
	two := remoteSet{{"n2", []process.PID{{Node: "n2", ID: 7, Creation: 1}, {Node: "n2", ID: 8, Creation: 1}}}}
	if got := newCell("h", memberSet{}, two, 2).view().members(); len(got) != 2 {
		t.Fatalf("a cell of two holds %v", got)
	}
}
