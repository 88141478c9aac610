package pgscope

import (
	"slices"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

// A big group keeps GetMembers's order and multiplicity (local members in
// join order, then each other node's, nodes by name), leaves take the
// latest copy, and Members reads the same version in place.
func TestBigGroupOrderAndMembersView(t *testing.T) {
	h := newHarness(t, nil)
	const procs = 300
	pids := make([]process.PID, procs)
	var want []process.PID // the local members, in join order
	for i := range pids {
		pids[i] = h.pid()
		n := 1 + i%3
		groups := slices.Repeat([]string{"big"}, n)
		if err := h.s.Join(pids[i], groups...); err != nil {
			t.Fatal(err)
		}
		want = append(want, slices.Repeat([]process.PID{pids[i]}, n)...)
	}
	// Every tenth process joins once more, then leaves once: the copy that
	// goes is the latest (at the end), not its first.
	for i := 0; i < procs; i += 10 {
		if err := h.s.Join(pids[i], "big"); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < procs; i += 10 {
		if err := h.s.Leave(pids[i], "big"); err != nil {
			t.Fatal(err)
		}
	}
	// Processes 1, 4, 7… leave one copy of the ones they joined first.
	for i := 1; i < procs; i += 3 {
		if err := h.s.Leave(pids[i], "big"); err != nil {
			t.Fatal(err)
		}
		last := -1
		for j, p := range want {
			if p == pids[i] {
				last = j
			}
		}
		want = slices.Delete(want, last, last+1)
	}
	// Two other nodes' members follow, n2 before n3 whatever the order
	// they came in.
	r3 := []process.PID{{Node: "n3", ID: 7, Creation: 1}, {Node: "n3", ID: 8, Creation: 1}}
	r2 := make([]process.PID, 50)
	for i := range r2 {
		r2[i] = process.PID{Node: "n2", ID: uint64(100 + i), Creation: 1}
	}
	if err := h.s.do("remote", func() error {
		h.s.st.remoteJoin("n3", "big", r3)
		h.s.st.remoteJoin("n2", "big", r2[:20])
		h.s.st.remoteJoin("n2", "big", r2[20:])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	all := slices.Concat(want, r2, r3)
	if got := h.s.GetMembers("big"); !slices.Equal(got, all) {
		t.Fatalf("GetMembers: %d members, want %d in order", len(got), len(all))
	}
	if got := h.s.GetLocalMembers("big"); !slices.Equal(got, want) {
		t.Fatalf("GetLocalMembers: %d members, want %d in order", len(got), len(want))
	}
	m := h.s.Members("big")
	if m.Len() != len(all) || m.LocalLen() != len(want) {
		t.Fatalf("Members: Len %d LocalLen %d, want %d %d", m.Len(), m.LocalLen(), len(all), len(want))
	}
	if got := slices.Collect(m.All()); !slices.Equal(got, all) {
		t.Fatal("Members.All differs from GetMembers")
	}
	if got := slices.Collect(m.Local()); !slices.Equal(got, want) {
		t.Fatal("Members.Local differs from GetLocalMembers")
	}
	// The version read stays as it was while the group changes.
	for _, p := range pids {
		if err := h.s.Leave(p, "big", "big", "big", "big"); err != nil {
			t.Fatal(err)
		}
	}
	if got := slices.Collect(m.All()); !slices.Equal(got, all) {
		t.Fatal("a version read changed after later leaves")
	}
	if got := h.s.GetMembers("big"); !slices.Equal(got, slices.Concat(r2, r3)) {
		t.Fatalf("after every local leave: %v", got)
	}
	if got := h.s.GetLocalMembers("big"); got != nil {
		t.Fatalf("local members left: %v", got)
	}
	if n := h.s.Members("nope").Len(); n != 0 {
		t.Fatalf("an unknown group has %d members", n)
	}
	for range (Members{}).All() {
		t.Fatal("the zero Members yields a member")
	}
}

// 30,000 members that exit at once are gone from GetMembers well within
// the second: their exits are applied in batches, each group
// published once per batch, with one member.left per copy.
func TestManyMembersExitAtOnce(t *testing.T) {
	const n = 30_000
	h := newHarness(t, func(s *Spec) { s.MonitorBuffer = 2 * n })
	stay := h.pid()
	if err := h.s.Join(stay, "big"); err != nil {
		t.Fatal(err)
	}
	pids := make([]process.PID, n)
	for i := range pids {
		p, err := h.node.Spawn(nop{}, process.SpawnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pids[i] = p
		groups := []string{"big"}
		if i%1000 == 0 {
			groups = append(groups, "big", "side") // two copies, and a second group
		}
		if err := h.s.Join(p, groups...); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.s.Members("big").Len(); got != n+n/1000+1 {
		t.Fatalf("%d members before the exits", got)
	}
	sub, _, err := h.s.Monitor(process.PID{}, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close(true)
	start := time.Now()
	for _, p := range pids {
		if err := h.node.Kill(p); err != nil {
			t.Fatal(err)
		}
	}
	deadline := start.Add(60 * time.Second)
	for h.s.Members("big").Len() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d members still listed after %v", h.s.Members("big").Len(), time.Since(start))
		}
		time.Sleep(time.Millisecond)
	}
	took := time.Since(start)
	t.Logf("%d members exiting at once gone from GetMembers in %v (kills included)", n, took)
	if got := h.s.GetMembers("big"); !slices.Equal(got, []process.PID{stay}) {
		t.Fatalf("left %v", got)
	}
	if got := h.s.WhichGroups(); !slices.Equal(got, []string{"big"}) {
		t.Fatalf("groups %v", got)
	}
	// One member.left per copy, each of one PID.
	left := 0
	for left < n+n/1000 {
		ev := next(t, sub)
		if ev.Kind != MemberLeft || ev.Group != "big" || len(ev.PIDs) != 1 {
			t.Fatalf("event %+v", ev)
		}
		left++
	}
	h.none(sub)
	if d := sub.Dropped(); d != 0 {
		t.Fatalf("%d events dropped", d)
	}
}
