package pgscope

import (
	"context"
	"errors"
	"testing"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
)

// These tests drive the Replica API the cluster protocol uses; they port
// the state-level halves of pg_SUITE's cluster cases.

// pg_SUITE:empty_group_by_remote_leave — a remote group that empties is
// deleted, from the view and from the node's own record.
func TestRemoteEmptyGroupDeleted(t *testing.T) {
	h := newHarness(t, nil)
	r1 := process.PID{Node: "n2", ID: 1, Creation: 1}
	r2 := process.PID{Node: "n2", ID: 2, Creation: 1}
	g := "empty_group_by_remote_leave"
	h.must(h.s.ApplyJoin(bg, "n2", g, []process.PID{r1}))
	if got := h.s.GetMembers(g); !equalPIDs(got, []process.PID{r1}) {
		t.Fatalf("members = %v", got)
	}
	if got := h.s.GetLocalMembers(g); len(got) != 0 {
		t.Fatalf("remote member counted as local: %v", got)
	}
	h.must(h.s.ApplyLeave(bg, "n2", []process.PID{r1}, []string{g}))
	if len(h.s.GetMembers(g)) != 0 || len(h.s.WhichGroups()) != 0 {
		t.Fatal("emptied remote group survived")
	}
	var nodeGroups int
	h.onLoop(func() { nodeGroups = len(h.s.st.nodes["n2"]) })
	if nodeGroups != 0 {
		t.Fatalf("node record keeps %d groups", nodeGroups)
	}
	// join [r1, r2], leave [r2, r1]
	h.must(h.s.ApplyJoin(bg, "n2", g, []process.PID{r1, r2}))
	if got := h.s.GetMembers(g); !equalPIDs(got, []process.PID{r1, r2}) {
		t.Fatalf("members = %v", got)
	}
	h.must(h.s.ApplyLeave(bg, "n2", []process.PID{r2, r1}, []string{g}))
	if len(h.s.GetMembers(g)) != 0 {
		t.Fatal("group not emptied")
	}
	// A leave of members never known raises nothing.
	sub, _, _ := h.s.Events(process.PID{})
	defer sub.Close(false)
	h.must(h.s.ApplyLeave(bg, "n2", []process.PID{r1}, []string{g, "other"}))
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
	h.must(h.s.ApplyJoin(bg, "n2", "one", []process.PID{remote}))
	sub, _, err := h.s.Events(process.PID{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close(false)
	// A broken sync: one gets a second copy, a new group appears.
	h.must(h.s.ApplySync(bg, "n2", map[string][]process.PID{
		"one":         {remote, remote},
		"forced_sync": {remote, remote},
	}))
	expectEvent(t, sub, MemberJoined, "forced_sync", remote, remote)
	expectEvent(t, sub, MemberJoined, "one", remote)
	if got := h.s.GetMembers("one"); !sameMembers(got, []process.PID{local, remote, remote}) {
		t.Fatalf("one = %v", got)
	}
	// The peer's real state comes back: the extra copy and group go.
	h.must(h.s.ApplySync(bg, "n2", map[string][]process.PID{"one": {remote}}))
	expectEvent(t, sub, MemberLeft, "forced_sync", remote, remote)
	expectEvent(t, sub, MemberLeft, "one", remote)
	if got := h.s.GetMembers("one"); !sameMembers(got, []process.PID{local, remote}) {
		t.Fatalf("one = %v", got)
	}
	if got := h.s.WhichGroups(); len(got) != 1 {
		t.Fatalf("groups = %v", got)
	}
	// The same sync again changes nothing and says nothing.
	h.must(h.s.ApplySync(bg, "n2", map[string][]process.PID{"one": {remote}}))
	h.none(sub)
	// The node leaves the cluster: its members leave, local ones stay.
	h.must(h.s.ApplyNodeDown(bg, "n2"))
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
	h.must(h.s.ApplyJoin(bg, "b", "g", []process.PID{b}))
	h.must(h.s.ApplyJoin(bg, "a", "g", []process.PID{a}))
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

var bg = context.Background()

// must fails the test on an error of the Replica API.
func (h *harness) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// A peer speaks only for itself: a remote update that names this node, no
// node, or PIDs of another node is refused and changes nothing.
func TestReplicaRefusesForeignMembers(t *testing.T) {
	h := newHarness(t, nil)
	local := h.pid()
	other := process.PID{Node: "n3", ID: 1, Creation: 1}
	tests := []struct {
		name string
		err  error
	}{
		{"join as this node", h.s.ApplyJoin(bg, "n1", "g", []process.PID{local})},
		{"join without a node", h.s.ApplyJoin(bg, "", "g", []process.PID{other})},
		{"join of another node's pid", h.s.ApplyJoin(bg, "n2", "g", []process.PID{other})},
		{"join of the zero pid", h.s.ApplyJoin(bg, "n2", "g", []process.PID{{}})},
		{"join of an empty group", h.s.ApplyJoin(bg, "n3", "", []process.PID{other})},
		{"leave of another node's pid", h.s.ApplyLeave(bg, "n2", []process.PID{other}, []string{"g"})},
		{"sync of another node's pid", h.s.ApplySync(bg, "n2", map[string][]process.PID{"g": {other}})},
		{"sync with an empty group", h.s.ApplySync(bg, "n3", map[string][]process.PID{"": {other}})},
		{"this node down", h.s.ApplyNodeDown(bg, "n1")},
	}
	for _, tc := range tests {
		if tc.name == "join of an empty group" || tc.name == "sync with an empty group" {
			mustKind(t, tc.err, ErrInvalidGroup)
			continue
		}
		if !errors.Is(tc.err, ErrNotRemote) {
			t.Errorf("%s: err = %v, want %v", tc.name, tc.err, ErrNotRemote)
		}
	}
	if got := h.s.WhichGroups(); len(got) != 0 {
		t.Fatalf("refused updates changed the scope: %v", got)
	}
}

// SubscribeLocal sees this node's members and their changes, never a
// remote node's; LocalMembers reads the same from the index.
func TestSubscribeLocal(t *testing.T) {
	h := newHarness(t, nil)
	a, b := h.pid(), h.pid()
	remote := process.PID{Node: "n2", ID: 7, Creation: 1}
	h.must(h.s.Join(a, "g", "g"))
	h.must(h.s.ApplyJoin(bg, "n2", "g", []process.PID{remote}))
	sub, snap, err := h.s.SubscribeLocal(SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close(false)
	if len(snap) != 1 || !equalPIDs(snap["g"], []process.PID{a, a}) {
		t.Fatalf("snapshot = %v", snap)
	}
	h.must(h.s.ApplyJoin(bg, "n2", "h", []process.PID{remote}))
	h.must(h.s.ApplySync(bg, "n2", map[string][]process.PID{"g": {remote, remote}}))
	h.must(h.s.Join(b, "h"))
	expectEvent(t, sub, MemberJoined, "h", b)
	h.must(h.s.ApplyNodeDown(bg, "n2"))
	h.must(h.s.Leave(a, "g"))
	expectEvent(t, sub, MemberLeft, "g", a)
	h.kill(b)
	expectEvent(t, sub, MemberLeft, "h", b)
	h.none(sub)
	got := h.s.LocalMembers()
	if len(got) != 1 || !equalPIDs(got["g"], []process.PID{a}) {
		t.Fatalf("local members = %v", got)
	}
	// The caller owns what LocalMembers returns.
	got["g"][0] = process.PID{}
	if again := h.s.LocalMembers(); !equalPIDs(again["g"], []process.PID{a}) {
		t.Fatalf("local members after the caller's edit = %v", again)
	}
}

// The Replica API copies what it is given: a caller that reuses its
// slices afterwards changes nothing in the scope.
func TestReplicaCopiesArguments(t *testing.T) {
	h := newHarness(t, nil)
	r1 := process.PID{Node: "n2", ID: 1, Creation: 1}
	r2 := process.PID{Node: "n2", ID: 2, Creation: 1}
	pids := []process.PID{r1}
	h.must(h.s.ApplyJoin(bg, "n2", "g", pids))
	pids[0] = r2
	sync := map[string][]process.PID{"h": {r1}}
	h.must(h.s.ApplySync(bg, "n2", sync))
	sync["h"][0] = r2
	if got := h.s.GetMembers("h"); !equalPIDs(got, []process.PID{r1}) {
		t.Fatalf("h = %v", got)
	}
	if got := h.s.GetMembers("g"); len(got) != 0 {
		t.Fatalf("g = %v (the sync should have removed it)", got)
	}
}

// A remote change builds an event only when a subscription other than a
// local one (the replica's) can take it, and the count of local
// subscriptions follows them as they come and go.
func TestRemoteChangeBuildsNoEventForLocalSubscriptions(t *testing.T) {
	h := newHarness(t, nil)
	remote := process.PID{Node: "n2", ID: 7, Creation: 1}
	listened := func(local bool) (ok bool) {
		h.must(h.s.Do(func() error { ok = h.s.st.listened("g", local); return nil }))
		return ok
	}
	if listened(false) || listened(true) {
		t.Fatal("a change is taken with no subscription")
	}
	local, _, err := h.s.SubscribeLocal(SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close(false)
	if listened(false) || !listened(true) {
		t.Fatal("with a local subscription: remote changes must build no event, local ones must")
	}
	all, _, err := h.s.SubscribeAll(SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !listened(false) {
		t.Fatal("a scope subscription does not take remote changes")
	}
	h.must(h.s.ApplyJoin(bg, "n2", "g", []process.PID{remote}))
	expectEvent(t, all, MemberJoined, "g", remote)
	all.Close(false)
	testutil.Eventually(t, "the scope subscription to be forgotten", func() bool { return !listened(false) })
	if !listened(true) {
		t.Fatal("the local subscription is no longer counted")
	}
	h.must(h.s.ApplyJoin(bg, "n2", "g", []process.PID{remote}))
	h.none(local)
}

// OnLoop.ApplyOps keeps nothing of the ops it is given: the replica
// decodes every message into the same buffers.
func TestApplyOpsKeepsNothing(t *testing.T) {
	h := newHarness(t, nil)
	r1 := process.PID{Node: "n2", ID: 1, Creation: 1}
	r2 := process.PID{Node: "n2", ID: 2, Creation: 1}
	pids := []process.PID{r1, r1}
	ops := []Op{{Group: "g", PIDs: pids[:1:1]}, {Group: "h", PIDs: pids[1:]}}
	h.must(h.s.Do(func() error { return h.s.OnLoop().ApplyOps("n2", ops) }))
	pids[0], pids[1] = r2, r2
	ops[0].Group = "x"
	for _, g := range []string{"g", "h"} {
		if got := h.s.GetMembers(g); !equalPIDs(got, []process.PID{r1}) {
			t.Fatalf("%s = %v after the caller reused its ops", g, got)
		}
	}
	h.must(h.s.Do(func() error {
		return h.s.OnLoop().ApplyOps("n2", []Op{{Leave: true, Group: "g", PIDs: pids[:1]}})
	}))
	pids[0] = r1
	if got := h.s.GetMembers("g"); !equalPIDs(got, []process.PID{r1}) {
		t.Fatalf("g = %v: a leave of a member not there changed it", got)
	}
}
