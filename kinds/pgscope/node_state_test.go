package pgscope

import (
	"testing"

	"github.com/proctor-run/proctor/process"
)

// These tests drive the per-node seam the cluster protocol will use; they
// port the state-level halves of pg_SUITE's cluster cases.

// pg_SUITE:empty_group_by_remote_leave — a remote group that empties is
// deleted, from the view and from the node's own record.
func TestRemoteEmptyGroupDeleted(t *testing.T) {
	h := newHarness(t, nil)
	r1 := process.PID{Node: "n2", ID: 1, Creation: 1}
	r2 := process.PID{Node: "n2", ID: 2, Creation: 1}
	g := "empty_group_by_remote_leave"
	h.onLoop(func() { h.s.st.remoteJoin("n2", g, []process.PID{r1}) })
	if got := h.s.GetMembers(g); !equalPIDs(got, []process.PID{r1}) {
		t.Fatalf("members = %v", got)
	}
	if got := h.s.GetLocalMembers(g); len(got) != 0 {
		t.Fatalf("remote member counted as local: %v", got)
	}
	h.onLoop(func() { h.s.st.remoteLeave("n2", []process.PID{r1}, []string{g}) })
	if len(h.s.GetMembers(g)) != 0 || len(h.s.WhichGroups()) != 0 {
		t.Fatal("emptied remote group survived")
	}
	var nodeGroups int
	h.onLoop(func() { nodeGroups = len(h.s.st.nodes["n2"]) })
	if nodeGroups != 0 {
		t.Fatalf("node record keeps %d groups", nodeGroups)
	}
	// join [r1, r2], leave [r2, r1]
	h.onLoop(func() { h.s.st.remoteJoin("n2", g, []process.PID{r1, r2}) })
	if got := h.s.GetMembers(g); !equalPIDs(got, []process.PID{r1, r2}) {
		t.Fatalf("members = %v", got)
	}
	h.onLoop(func() { h.s.st.remoteLeave("n2", []process.PID{r2, r1}, []string{g}) })
	if len(h.s.GetMembers(g)) != 0 {
		t.Fatal("group not emptied")
	}
	// A leave of members never known raises nothing.
	sub, _, _ := h.s.Events(process.PID{})
	defer sub.Close(false)
	h.onLoop(func() { h.s.st.remoteLeave("n2", []process.PID{r1}, []string{g, "other"}) })
	h.none(sub)
}

// pg_SUITE:forced_sync — a full sync replaces what was known of a node,
// and only the difference raises events.
func TestSyncDiff(t *testing.T) {
	h := newHarness(t, nil)
	local := h.pid()
	remote := process.PID{Node: "n2", ID: 5, Creation: 1}
	if err := h.s.Join(local, "one"); err != nil {
		t.Fatal(err)
	}
	h.onLoop(func() { h.s.st.remoteJoin("n2", "one", []process.PID{remote}) })
	sub, _, err := h.s.Events(process.PID{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close(false)
	// A broken sync: one gets a second copy, a new group appears.
	h.onLoop(func() {
		h.s.st.syncNode("n2", map[string][]process.PID{
			"one":         {remote, remote},
			"forced_sync": {remote, remote},
		})
	})
	expectEvent(t, sub, MemberJoined, "forced_sync", remote, remote)
	expectEvent(t, sub, MemberJoined, "one", remote)
	if got := h.s.GetMembers("one"); !sameMembers(got, []process.PID{local, remote, remote}) {
		t.Fatalf("one = %v", got)
	}
	// The peer's real state comes back: the extra copy and group go.
	h.onLoop(func() { h.s.st.syncNode("n2", map[string][]process.PID{"one": {remote}}) })
	expectEvent(t, sub, MemberLeft, "forced_sync", remote, remote)
	expectEvent(t, sub, MemberLeft, "one", remote)
	if got := h.s.GetMembers("one"); !sameMembers(got, []process.PID{local, remote}) {
		t.Fatalf("one = %v", got)
	}
	if got := h.s.WhichGroups(); len(got) != 1 {
		t.Fatalf("groups = %v", got)
	}
	// The same sync again changes nothing and says nothing.
	h.onLoop(func() { h.s.st.syncNode("n2", map[string][]process.PID{"one": {remote}}) })
	h.none(sub)
	// The node leaves the cluster: its members leave, local ones stay.
	h.onLoop(func() { h.s.st.nodeDown("n2") })
	expectEvent(t, sub, MemberLeft, "one", remote)
	if got := h.s.GetMembers("one"); !equalPIDs(got, []process.PID{local}) {
		t.Fatalf("one = %v", got)
	}
}

// Members are listed local first, then each node's, in node order; the
// local view holds local members only.
func TestMemberOrderAcrossNodes(t *testing.T) {
	h := newHarness(t, nil)
	l := h.pid()
	a := process.PID{Node: "a", ID: 1, Creation: 1}
	b := process.PID{Node: "b", ID: 1, Creation: 1}
	h.onLoop(func() { h.s.st.remoteJoin("b", "g", []process.PID{b}) })
	h.onLoop(func() { h.s.st.remoteJoin("a", "g", []process.PID{a}) })
	if err := h.s.Join(l, "g"); err != nil {
		t.Fatal(err)
	}
	if got := h.s.GetMembers("g"); !equalPIDs(got, []process.PID{l, a, b}) {
		t.Fatalf("members = %v", got)
	}
	if got := h.s.WhichLocalGroups(); len(got) != 1 {
		t.Fatalf("local groups = %v", got)
	}
	if err := h.s.Leave(l, "g"); err != nil {
		t.Fatal(err)
	}
	if got := h.s.WhichLocalGroups(); len(got) != 0 {
		t.Fatalf("local groups = %v", got)
	}
	if got := h.s.WhichGroups(); len(got) != 1 {
		t.Fatalf("groups = %v", got)
	}
}
