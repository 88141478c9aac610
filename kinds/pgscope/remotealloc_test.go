package pgscope

import (
	"slices"
	"testing"

	"github.com/proctor-run/proctor/process"
)

// A peer's join and leave of one member, the cross-node path's usual
// operation, costs the loop a fixed, small number of allocations: the
// node's set with its list on the join (the group's version is the one it
// had when that member last left, state.version), nothing on the leave,
// and one per event (its list and shared value together) only when
// someone listens. Copies for nobody, a clock read per operation and the
// scratch lists of a leave cost nothing.
func TestRemoteJoinLeaveAllocs(t *testing.T) {
	remote := process.PID{Node: "n2", ID: 7, Creation: 1}
	pids := []process.PID{remote}
	groups := []string{"g"}
	for _, tc := range []struct {
		name   string
		listen bool
		want   float64
	}{
		{"nobody listens", false, 1},
		{"a monitor of the group", true, 3},
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

// A group that empties and fills again with the same one member gets back
// the version it had (state.version): a join of the worker that comes
// and goes allocates nothing. Any other refill gets a new version, and a
// version a reader holds never changes.
func TestRefilledGroupReusesItsVersion(t *testing.T) {
	h := newHarness(t, nil)
	p1, p2 := h.pid(), h.pid()
	remote := process.PID{Node: "n2", ID: 7, Creation: 1}
	join := func(pid process.PID, groups ...string) {
		t.Helper()
		if err := h.s.Join(pid, groups...); err != nil {
			t.Fatal(err)
		}
	}
	leave := func(pid process.PID, groups ...string) {
		t.Helper()
		if err := h.s.Leave(pid, groups...); err != nil {
			t.Fatal(err)
		}
	}
	same := func(a, b []process.PID) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }
	want := func(what string, got []process.PID, pids ...process.PID) {
		t.Helper()
		if !slices.Equal(got, pids) {
			t.Fatalf("%s: members %v, want %v", what, got, pids)
		}
	}

	join(p1, "g")
	first := h.s.GetMembers("g")
	leave(p1, "g")
	join(p1, "g")
	again := h.s.GetMembers("g")
	want("p1 back", again, p1)
	if !same(first, again) {
		t.Fatal("p1's return to g made a new version")
	}

	leave(p1, "g")
	join(p2, "g")
	other := h.s.GetMembers("g")
	want("p2 in p1's place", other, p2)
	want("the version a reader held", first, p1)
	if same(first, other) {
		t.Fatal("p2 got p1's version")
	}

	// Two memberships, then one: not the one-member version of before.
	join(p2, "g")
	want("p2 twice", h.s.GetMembers("g"), p2, p2)
	leave(p2, "g")
	want("p2 once", h.s.GetMembers("g"), p2)
	leave(p2, "g")
	if got := h.s.GetMembers("g"); got != nil {
		t.Fatalf("an empty group lists %v", got)
	}

	// A remote member after a local one, and back.
	join(p1, "g")
	leave(p1, "g")
	h.onLoop(func() { h.s.st.remoteJoin("n2", "g", []process.PID{remote}) })
	want("the remote member", h.s.GetMembers("g"), remote)
	want("its local members", h.s.GetLocalMembers("g"))
	h.onLoop(func() { h.s.st.remoteLeave("n2", []process.PID{remote}, []string{"g"}) })
	join(p1, "g")
	want("p1 after the remote member", h.s.GetMembers("g"), p1)
	want("p1, local", h.s.GetLocalMembers("g"), p1)

	// The worker's round on the loop allocates nothing.
	groups := []string{"g"}
	leave(p1, "g")
	var allocs float64
	h.onLoop(func() {
		allocs = testing.AllocsPerRun(100, func() {
			if err := h.s.st.join(p1, groups); err != nil {
				t.Error(err)
			}
			if err := h.s.st.leave(p1, groups); err != nil {
				t.Error(err)
			}
		})
	})
	if allocs != 0 {
		t.Fatalf("a join and leave of the same member allocate %.1f, want 0", allocs)
	}
}
