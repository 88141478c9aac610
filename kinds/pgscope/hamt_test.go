package pgscope

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/proctor-run/proctor/process"
)

// The trie agrees with a map through random inserts and deletes, and old
// versions stay intact (persistence).
func TestHAMTAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var root *hnode
	ref := map[string]*groupView{}
	type version struct {
		root *hnode
		ref  map[string]*groupView
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
			v := &groupView{name: k}
			var added bool
			root, added = root.with(hashGroup(k), v, 0)
			_, had := ref[k]
			if added == had {
				t.Fatalf("with(%s) added=%v had=%v", k, added, had)
			}
			ref[k] = v
		}
		if i%2000 == 0 {
			cp := make(map[string]*groupView, len(ref))
			for k, v := range ref {
				cp[k] = v
			}
			versions = append(versions, version{root, cp})
		}
	}
	versions = append(versions, version{root, ref})
	for _, ver := range versions {
		n := 0
		ver.root.each(func(v *groupView) {
			n++
			if ver.ref[v.name] != v {
				t.Fatalf("each yielded %s not in the reference", v.name)
			}
		})
		if n != len(ver.ref) {
			t.Fatalf("each yielded %d, want %d", n, len(ver.ref))
		}
		for k, v := range ver.ref {
			if got := ver.root.get(hashGroup(k), k); got != v {
				t.Fatalf("get(%s) = %v", k, got)
			}
		}
		if ver.root.get(hashGroup("absent"), "absent") != nil {
			t.Fatal("found an absent key")
		}
	}
	for k := range ref {
		root, _ = root.without(hashGroup(k), k, 0)
	}
	if root != nil {
		t.Fatal("emptied trie is not nil")
	}
}

// Keys whose full hashes collide share a leaf bucket.
func TestHAMTCollisions(t *testing.T) {
	var root *hnode
	const h = uint64(0xdeadbeef)
	a, b, c := &groupView{name: "a"}, &groupView{name: "b"}, &groupView{name: "c"}
	root, _ = root.with(h, a, 0)
	root, _ = root.with(h, b, 0)
	root, _ = root.with(h^1<<40, c, 0)
	// Views in a collision chain may be copies: compare by name.
	name := func(v *groupView) string {
		if v == nil {
			return ""
		}
		return v.name
	}
	if name(root.get(h, "a")) != "a" || name(root.get(h, "b")) != "b" || root.get(h^1<<40, "c") != c || root.get(h, "c") != nil {
		t.Fatal("collision bucket lookup failed")
	}
	old := root
	a2 := &groupView{name: "a", all: make([]process.PID, 1)}
	if root2, added := root.with(h, a2, 0); added || root2.get(h, "a") != a2 || len(old.get(h, "a").all) != 0 || name(root2.get(h, "b")) != "b" {
		t.Fatal("replace in bucket failed or mutated the old version")
	}
	root, _ = root.without(h, "a", 0)
	if root.get(h, "a") != nil || name(root.get(h, "b")) != "b" || name(old.get(h, "a")) != "a" {
		t.Fatal("delete from bucket failed")
	}
	root, _ = root.without(h, "b", 0)
	root, _ = root.without(h^1<<40, "c", 0)
	if root != nil {
		t.Fatal("not empty")
	}
}
