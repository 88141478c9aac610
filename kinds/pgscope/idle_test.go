package pgscope

import (
	"testing"
)

// monitored reads, on the loop, how many processes the scope monitors and how
// many of them are idle; it checks the idle count against the procStates.
func (h *harness) monitored() (monitored, idle int) {
	h.t.Helper()
	h.onLoop(func() {
		monitored, idle = len(h.s.st.procs), h.s.st.idle
		n := 0
		for _, ps := range h.s.st.procs {
			if ps.idle {
				n++
			}
		}
		if n != idle {
			h.t.Errorf("idle count %d, %d procStates idle", idle, n)
		}
	})
	return monitored, idle
}

// A process that leaves everything stays monitored, idle, so that joining
// again costs no new monitor; idle processes are dropped once they
// outnumber the others (and 64), and forgotten when they exit.
func TestIdleProcesses(t *testing.T) {
	h := newHarness(t, nil)
	p := h.pid()
	h.must(h.s.Join(p, "g"))
	var first *procState
	h.onLoop(func() { first = h.s.st.proc(p) })
	h.must(h.s.Leave(p, "g"))
	if m, idle := h.monitored(); m != 1 || idle != 1 {
		t.Fatalf("after the leave: %d monitored, %d idle; want 1, 1", m, idle)
	}
	h.must(h.s.Join(p, "g"))
	var again *procState
	h.onLoop(func() { again = h.s.st.proc(p) })
	if again != first {
		t.Fatal("a rejoining idle process was tracked anew")
	}
	if m, idle := h.monitored(); m != 1 || idle != 0 {
		t.Fatalf("after rejoining: %d monitored, %d idle; want 1, 0", m, idle)
	}
	// A subscription alone keeps a process from being idle; closing it
	// makes it idle.
	h.must(h.s.Leave(p, "g"))
	sub, _, err := h.s.Monitor(p, "g")
	h.must(err)
	if _, idle := h.monitored(); idle != 0 {
		t.Fatalf("a subscriber counted idle")
	}
	sub.Close(false)
	eventually(t, "closed subscription to make its owner idle", func() bool {
		_, idle := h.monitored()
		return idle == 1
	})
	// An idle process that exits is forgotten.
	h.kill(p)
	eventually(t, "exited idle process to be forgotten", func() bool {
		m, idle := h.monitored()
		return m == 0 && idle == 0
	})
	mustKind(t, h.s.Leave(p, "g"), ErrNotJoined)

	// Many processes that join and leave: the idle ones never outnumber
	// the members by more than 64.
	keep := h.pid()
	h.must(h.s.Join(keep, "k"))
	for i := range 300 {
		q := h.pid()
		h.must(h.s.Join(q, "g"))
		h.must(h.s.Leave(q, "g"))
		if m, idle := h.monitored(); idle > max(64, m-idle) {
			t.Fatalf("after %d processes: %d monitored, %d idle", i+1, m, idle)
		}
	}
	if m, idle := h.monitored(); m-idle != 1 {
		t.Fatalf("%d monitored, %d idle; want one member", m, idle)
	}
	if got := h.s.GetMembers("k"); len(got) != 1 || got[0] != keep {
		t.Fatalf("k = %v after idle drops", got)
	}
	// The member is still monitored: its exit removes it.
	h.kill(keep)
	eventually(t, "member's exit to remove it", func() bool { return h.s.GetMembers("k") == nil })
}
