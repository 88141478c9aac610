package pgscope

import (
	"fmt"
	"slices"
	"testing"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// cells counts the cells in the published index, vacant ones included.
func (h *harness) cells() (all, vacant int) {
	h.s.root.Load().each(func(c *groupCell) {
		all++
		if c.view() == nil {
			vacant++
		}
	})
	return all, vacant
}

// An emptied group keeps its cell, vacant, and is gone for every reader;
// joining it again fills the same cell. Vacant cells never count against
// max_groups, and once they outnumber the groups (and 64) a sweep removes
// them, so the index stays within twice the groups.
func TestVacantGroups(t *testing.T) {
	h := newHarness(t, func(s *Spec) { s.MaxGroups = 3 })
	p, q := h.pid(), h.pid()
	h.must(h.s.Join(p, "g"))
	cell := h.s.root.Load().get(hashGroup("g"), "g")
	h.must(h.s.Leave(p, "g"))
	if all, vacant := h.cells(); all != 1 || vacant != 1 {
		t.Fatalf("after the leave: %d cells, %d vacant; want 1, 1", all, vacant)
	}
	if m := h.s.GetMembers("g"); m != nil {
		t.Fatalf("emptied group has members %v", m)
	}
	if g := h.s.WhichGroups(); len(g) != 0 {
		t.Fatalf("emptied group listed: %v", g)
	}
	if g := h.s.WhichLocalGroups(); len(g) != 0 {
		t.Fatalf("emptied group listed as local: %v", g)
	}
	if m := h.s.LocalMembers(); len(m) != 0 {
		t.Fatalf("emptied group in LocalMembers: %v", m)
	}
	if v := h.s.View().(ScopeView); len(v.Groups) != 0 || v.GroupsTotal != 0 {
		t.Fatalf("emptied group in the view: %v", v.Groups)
	}
	if v := h.s.ViewPage(registry.ViewPage{Group: "g"}).(ScopeView); len(v.Groups) != 0 || v.GroupsTotal != 0 {
		t.Fatalf("emptied group in its page: %v", v.Groups)
	}
	if _, snap, err := h.s.Events(process.PID{}); err != nil || len(snap) != 0 {
		t.Fatalf("events snapshot = %v, %v", snap, err)
	}

	h.must(h.s.Join(q, "g", "g"))
	if got := h.s.root.Load().get(hashGroup("g"), "g"); got != cell {
		t.Fatal("refilled group got a new cell")
	}
	if m := h.s.GetMembers("g"); !slices.Equal(m, []process.PID{q, q}) {
		t.Fatalf("refilled group = %v", m)
	}
	h.must(h.s.Leave(q, "g", "g"))

	// max_groups counts groups with members, not vacant cells.
	h.must(h.s.Join(p, "a", "b", "c"))
	h.must(h.s.Leave(p, "a", "b", "c"))
	h.must(h.s.Join(q, "x", "y", "z"))
	mustKind(t, h.s.Join(q, "w"), ErrTooManyGroups)
	h.must(h.s.Leave(q, "x", "y", "z"))

	// Churn over many names: vacant cells are swept.
	for i := range 1000 {
		g := fmt.Sprintf("churn-%d", i)
		h.must(h.s.Join(p, g))
		h.must(h.s.Leave(p, g))
		if all, _ := h.cells(); all > 64+1 {
			t.Fatalf("after %d names: %d cells, no sweep", i+1, all)
		}
	}
	if g := h.s.WhichGroups(); len(g) != 0 {
		t.Fatalf("groups left after churn: %v", g)
	}
	// A sweep keeps the groups that have members.
	h.must(h.s.Join(q, "kept"))
	for i := range 200 {
		g := fmt.Sprintf("more-%d", i)
		h.must(h.s.Join(p, g))
		h.must(h.s.Leave(p, g))
	}
	if m := h.s.GetMembers("kept"); !slices.Equal(m, []process.PID{q}) {
		t.Fatalf("kept = %v after sweeps", m)
	}
	if g := h.s.WhichGroups(); !slices.Equal(g, []string{"kept"}) {
		t.Fatalf("groups = %v", g)
	}
	var live, groups int
	h.onLoop(func() { live, groups = h.s.st.live, len(h.s.st.groups) })
	all, vacant := h.cells()
	if live != 1 || all != groups || all-vacant != 1 {
		t.Fatalf("live %d, loop groups %d, cells %d (%d vacant)", live, groups, all, vacant)
	}
}

// A version of a group of one member is one allocation, whichever node the
// member is on; bigger groups list local members first.
func TestViewOfOneMember(t *testing.T) {
	h := newHarness(t, nil)
	p := h.pid()
	remote := process.PID{Node: "n2", ID: 7, Creation: 1}
	h.must(h.s.ApplyJoin(t.Context(), "n2", "r", []process.PID{remote}))
	if m := h.s.GetMembers("r"); !slices.Equal(m, []process.PID{remote}) {
		t.Fatalf("r = %v", m)
	}
	if m := h.s.GetLocalMembers("r"); m != nil {
		t.Fatalf("local members of a remote-only group: %v", m)
	}
	h.must(h.s.Join(p, "r"))
	if m := h.s.GetMembers("r"); !slices.Equal(m, []process.PID{p, remote}) {
		t.Fatalf("r = %v", m)
	}
	h.must(h.s.ApplyLeave(t.Context(), "n2", []process.PID{remote}, []string{"r"}))
	if m := h.s.GetMembers("r"); !slices.Equal(m, []process.PID{p}) {
		t.Fatalf("r = %v", m)
	}
	if m := h.s.GetLocalMembers("r"); !slices.Equal(m, []process.PID{p}) {
		t.Fatalf("local r = %v", m)
	}
}
