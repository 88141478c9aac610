package pgscope

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/proctor-run/proctor/process"
)

// The trie agrees with a map through random inserts and deletes, and old
// versions stay intact (persistence).
func TestHAMTAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var root *hnode
	ref := map[string]*groupCell{}
	type version struct {
		root *hnode
		ref  map[string]*groupCell
	}
	var versions []version
	for i := range 20000 {
		k := fmt.Sprintf("g%d", r.IntN(3000))
		if r.IntN(3) == 0 {
			var removed bool
			root, removed = root.without(hashGroup(k), k, 0)
			_, had := ref[k]
			if removed != had {
				t.Fatalf("without(%s) = %v, had %v", k, removed, had)
			}
			delete(ref, k)
		} else {
			c := &groupCell{name: k}
			var added bool
			root, added = root.with(hashGroup(k), c, 0)
			_, had := ref[k]
			if added == had {
				t.Fatalf("with(%s) added=%v had=%v", k, added, had)
			}
			ref[k] = c
		}
		if i%2000 == 0 {
			cp := make(map[string]*groupCell, len(ref))
			for k, c := range ref {
				cp[k] = c
			}
			versions = append(versions, version{root, cp})
		}
	}
	versions = append(versions, version{root, ref})
	for _, ver := range versions {
		checkTrie(t, ver.root, ver.ref)
	}
	for k := range ref {
		root, _ = root.without(hashGroup(k), k, 0)
	}
	if root != nil {
		t.Fatal("emptied trie is not nil")
	}
}

// checkTrie compares every way of reading root with ref.
func checkTrie(t *testing.T, root *hnode, ref map[string]*groupCell) {
	t.Helper()
	n := 0
	root.each(func(c *groupCell) {
		n++
		if ref[c.name] != c {
			t.Fatalf("each yielded %s, not the reference's cell", c.name)
		}
	})
	if n != len(ref) {
		t.Fatalf("each yielded %d, want %d", n, len(ref))
	}
	for k, c := range ref {
		if got := root.get(c.hash, k); got != c {
			t.Fatalf("get(%s) = %v", k, got)
		}
	}
	if root.get(hashGroup("absent"), "absent") != nil {
		t.Fatal("found an absent key")
	}
}

// Keys whose full hashes collide share a bucket, at any depth, and a bucket
// pushed down by another hash or collapsed back by a removal keeps them.
func TestHAMTCollisions(t *testing.T) {
	const h = uint64(0xdeadbeef)
	// near shares h's first two levels (10 bits), far only the first.
	near, far := h^1<<40, h^1<<7
	cells := map[string]*groupCell{}
	var root *hnode
	add := func(name string, hash uint64) {
		t.Helper()
		c := &groupCell{name: name}
		var added bool
		root, added = root.with(hash, c, 0)
		_, had := cells[name]
		if added == had {
			t.Fatalf("with(%s) added=%v had=%v", name, added, had)
		}
		cells[name] = c
		checkTrie(t, root, cells)
	}
	del := func(name string) {
		t.Helper()
		var removed bool
		root, removed = root.without(cells[name].hash, name, 0)
		if !removed {
			t.Fatalf("without(%s) removed nothing", name)
		}
		delete(cells, name)
		checkTrie(t, root, cells)
	}
	add("a", h)
	add("b", h) // a bucket of two
	add("c", h) // of three
	old, oldCells := root, map[string]*groupCell{"a": cells["a"], "b": cells["b"], "c": cells["c"]}
	add("b", h)    // a new cell for b replaces the old one in the bucket
	add("d", near) // pushes the bucket down
	add("e", far)
	checkTrie(t, old, oldCells) // the old version is untouched
	del("c")
	del("d") // the bucket collapses back up
	del("a") // a bucket of one becomes a cell
	if _, removed := root.without(h, "zz", 0); removed {
		t.Fatal("removed an absent name of a present hash")
	}
	del("b")
	del("e")
	if root != nil {
		t.Fatal("not empty")
	}
}

// clonePIDs copies lists of every length into memory the caller owns.
func TestClonePIDs(t *testing.T) {
	for n := range 6 {
		src := make([]process.PID, n)
		for i := range src {
			src[i] = process.PID{Node: "n", ID: uint64(i + 1), Creation: 1}
		}
		got := clonePIDs(src)
		if !slices.Equal(got, src) || (n == 0) != (got == nil) {
			t.Fatalf("clonePIDs(%v) = %v", src, got)
		}
		if n > 0 {
			got[0].ID = 99
			if src[0].ID == 99 {
				t.Fatalf("len %d: the copy shares the source", n)
			}
		}
	}
}

// GetMembers and GetLocalMembers return the group's version itself, of a
// small group and of a big one: no copy, no allocation, the same array for
// every reader; its capacity is its length, so a reader's append copies
// it; and a later change makes a new version, leaving a list read before
// as it was.
func TestGetMembersIsTheSnapshot(t *testing.T) {
	h := newHarness(t, nil)
	p, q := h.pid(), h.pid()
	h.must(h.s.Join(p, "one"))
	h.must(h.s.Join(p, "two"))
	h.must(h.s.Join(q, "two"))
	big := make([]string, flatMax+1)
	for i := range big {
		big[i] = "big"
	}
	h.must(h.s.Join(p, big...))
	for _, g := range []string{"one", "two", "big"} {
		for name, get := range map[string]func(string) []process.PID{"GetMembers": h.s.GetMembers, "GetLocalMembers": h.s.GetLocalMembers} {
			m := get(g)
			if len(m) == 0 || m[0] != p || cap(m) != len(m) {
				t.Fatalf("%s(%s) = %v (cap %d)", name, g, m, cap(m))
			}
			if again := get(g); &again[0] != &m[0] {
				t.Fatalf("%s(%s): a second read copied the list", name, g)
			}
			if n := testing.AllocsPerRun(100, func() { get(g) }); n != 0 {
				t.Fatalf("%s(%s): %v allocations per read", name, g, n)
			}
			grown := append(m, process.PID{})
			if &grown[0] == &m[0] {
				t.Fatalf("%s(%s): an append wrote past the list", name, g)
			}
			before := slices.Clone(m)
			h.must(h.s.Join(q, g))
			h.must(h.s.Leave(q, g))
			if !slices.Equal(m, before) {
				t.Fatalf("%s(%s): a read list changed with the group: %v, was %v", name, g, m, before)
			}
		}
	}
}
